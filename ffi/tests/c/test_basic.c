/* test_basic.c: the C ABI from C. Built with -std=c11 -Wall -Wextra -Werror -pedantic and run
 * by ffi/tests/c_abi.rs. Exits 0 when every check passes; prints each failure. */
#include "common.h"

/* A session from JSON options (robota_session_new_json) or aborts the test. */
static robota_session *make_session_json(robota_provider *p, const char *options) {
  robota_session *s = NULL;
  robota_error *err = NULL;
  robota_status st = robota_session_new_json(p, options, strlen(options), &s, &err);
  if (st != ROBOTA_STATUS_OK) {
    fprintf(stderr, "session: %d %s\n", (int)st, robota_error_message(err));
    exit(2);
  }
  return s;
}

static const char *OPTIONS = "{\"system_prompt\": \"test\", \"load_project_context\": false}";

/* ---- callback state ---- */
typedef struct {
  atomic_int events;
  atomic_int completes;
  atomic_int interrupted;
  atomic_int finalized;
  atomic_ullong last_seq;
  atomic_int out_of_order;
  atomic_int bad_event;
  atomic_int abort_on_delta; /* 1: abort from inside the callback on the first text_delta */
  atomic_int wait_status;    /* status of wait_idle called inside a callback */
  robota_session *session;
} counter;

static void counter_init(counter *c) {
  atomic_init(&c->events, 0);
  atomic_init(&c->completes, 0);
  atomic_init(&c->interrupted, 0);
  atomic_init(&c->finalized, 0);
  atomic_init(&c->last_seq, 0);
  atomic_init(&c->out_of_order, 0);
  atomic_init(&c->bad_event, 0);
  atomic_init(&c->abort_on_delta, 0);
  atomic_init(&c->wait_status, -1);
  c->session = NULL;
}

static int kind_is(const robota_event *ev, const char *kind) {
  return ev->kind_len == strlen(kind) && memcmp(ev->kind, kind, ev->kind_len) == 0;
}

static void on_event(void *user_data, const robota_event *ev) {
  counter *c = (counter *)user_data;
  atomic_fetch_add(&c->events, 1);
  if (ev->seq <= atomic_load(&c->last_seq)) atomic_fetch_add(&c->out_of_order, 1);
  atomic_store(&c->last_seq, ev->seq);
  if (ev->kind == NULL || ev->json == NULL || strlen(ev->json) != ev->json_len ||
      strlen(ev->kind) != ev->kind_len || ev->json[0] != '{')
    atomic_fetch_add(&c->bad_event, 1);
  if (kind_is(ev, "complete")) atomic_fetch_add(&c->completes, 1);
  if (kind_is(ev, "interrupted")) atomic_fetch_add(&c->interrupted, 1);
  if (kind_is(ev, "text_delta") && atomic_exchange(&c->abort_on_delta, 0) == 1) {
    CHECK(robota_session_abort(c->session, NULL) == ROBOTA_STATUS_OK);
    atomic_store(&c->wait_status, robota_session_wait_idle(c->session, 10, NULL));
  }
}

static void on_free(void *user_data) {
  counter *c = (counter *)user_data;
  atomic_fetch_add(&c->finalized, 1);
}

/* ---- tests ---- */

static void test_versions(void) {
  CHECK(robota_abi_version() >> 16 == ROBOTA_ABI_VERSION_MAJOR);
  CHECK((robota_abi_version() & 0xffff) == ROBOTA_ABI_VERSION_MINOR);
  CHECK(robota_version() != NULL && strlen(robota_version()) > 0);
  // One version for the header and the library it was built with (docs/COMPATIBILITY.md).
  CHECK(strcmp(robota_version(), ROBOTA_VERSION_STRING) == 0);
  CHECK(ROBOTA_VERSION_MAJOR == ROBOTA_ABI_VERSION_MAJOR && ROBOTA_VERSION_MINOR == ROBOTA_ABI_VERSION_MINOR);
}

static void test_full_turn_callback(void) {
  robota_runtime *rt = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_runtime_new(2, &rt, &e_));
  robota_provider *p =
      make_provider(rt, "{\"type\":\"scripted\",\"turns\":[{\"text\":[\"Hel\",\"lo\"]}]}");
  robota_session *s = make_session_json(p, OPTIONS);
  /* Handles may be freed before what was made from them. */
  robota_provider_free(p);
  robota_runtime_free(rt);

  counter c;
  counter_init(&c);
  uint64_t id = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe(s, on_event, &c, on_free, &id, &e_));
  CHECK(id != 0);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "hi", 2, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 10000, &e_));
  CHECK(atomic_load(&c.completes) == 1);
  CHECK(atomic_load(&c.events) >= 3);
  CHECK(atomic_load(&c.out_of_order) == 0);
  CHECK(atomic_load(&c.bad_event) == 0);

  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_messages(s, &json, &e_));
  CHECK(json != NULL && strstr(json, "\"Hello\"") != NULL);
  robota_string_free(json);

  /* Unsubscribe: finalizer exactly once, no callbacks afterwards. */
  CHECK(atomic_load(&c.finalized) == 0);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_unsubscribe(s, id, &e_));
  CHECK(atomic_load(&c.finalized) == 1);
  int events = atomic_load(&c.events);
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_STATE, robota_session_unsubscribe(s, id, &e_));
  robota_session_free(s);
  sleep_ms(50);
  CHECK(atomic_load(&c.finalized) == 1);
  CHECK(atomic_load(&c.events) == events);
}

static void test_pull_api(void) {
  robota_provider *p = make_provider(NULL, "{\"type\":\"scripted\",\"turns\":[{\"text\":\"pulled\"}]}");
  robota_session *s = make_session_json(
      p, "{\"system_prompt\": \"t\", \"load_project_context\": false, \"pull_events\": true}");
  robota_provider_free(p);
  uint64_t extra = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe_pull(s, &extra, &e_));
  CHECK(extra != 0);

  char *json = NULL;
  /* Nothing yet: a zero timeout returns TIMEOUT at once with NULL. */
  EXPECT_STATUS(ROBOTA_STATUS_TIMEOUT, robota_session_next_event(s, extra, 0, &json, &e_));
  CHECK(json == NULL);

  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "go", 2, &e_));
  uint64_t subs[2] = {0, extra};
  for (int i = 0; i < 2; i++) {
    int complete = 0, n = 0;
    while (!complete && n < 100) {
      robota_error *err = NULL;
      robota_status st = robota_session_next_event(s, subs[i], 5000, &json, &err);
      if (st != ROBOTA_STATUS_OK) {
        fprintf(stderr, "next_event: %d %s\n", (int)st, robota_error_message(err));
        robota_error_free(err);
        failures++;
        break;
      }
      n++;
      CHECK(strstr(json, "\"seq\":") != NULL);
      if (strstr(json, "\"type\":\"complete\"") != NULL) complete = 1;
      robota_string_free(json);
      json = NULL;
    }
    CHECK(complete);
  }
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_unsubscribe(s, extra, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_STATE, robota_session_next_event(s, extra, 0, &json, &e_));
  robota_session_free(s);
}

static void test_invalid_inputs(void) {
  robota_provider *p = NULL;
  robota_session *s = NULL;
  robota_error *err = NULL;
  const char bad_utf8[] = {'h', (char)0xff, 'i'};

  /* NULL pointers. */
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_provider_new_json(NULL, NULL, 5, &p, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_provider_new_json(NULL, "{}", 2, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_new_json(NULL, "", 0, &s, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_submit(NULL, "x", 1, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_abort(NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_wait_idle(NULL, 1, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_unsubscribe(NULL, 1, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_runtime_new(0, NULL, &e_));
  /* out_err may be NULL. */
  CHECK(robota_provider_new_json(NULL, NULL, 5, &p, NULL) == ROBOTA_STATUS_NULL_ARGUMENT);

  /* The error object. */
  CHECK(robota_provider_new_json(NULL, "{nope", 5, &p, &err) == ROBOTA_STATUS_INVALID_JSON);
  CHECK(err != NULL);
  CHECK(robota_error_code(err) == ROBOTA_STATUS_INVALID_JSON);
  CHECK(strstr(robota_error_message(err), "JSON") != NULL);
  robota_error_free(err);
  err = NULL;
  CHECK(robota_error_code(NULL) == ROBOTA_STATUS_NULL_ARGUMENT);
  CHECK(strcmp(robota_error_message(NULL), "") == 0);
  robota_error_free(NULL);
  robota_string_free(NULL);
  robota_session_free(NULL);
  robota_provider_free(NULL);
  robota_runtime_free(NULL);

  /* Invalid UTF-8 and bad JSON. */
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8, robota_provider_new_json(NULL, bad_utf8, 3, &p, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON, robota_provider_new_json(NULL, "[1,2]", 5, &p, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON, robota_provider_new_json(NULL, "", 0, &p, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_provider_new_json(NULL, "{\"type\":\"nope\"}", 15, &p, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_provider_new_json(NULL, "{\"type\":\"scripted\",\"turns\":5}", 29, &p, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_provider_new_json(NULL, "{\"type\":\"openai\"}", 17, &p, &e_));

  p = make_provider(NULL, "{\"type\":\"scripted\",\"turns\":[]}");
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON, robota_session_new_json(p, "{\"bogus\":1}", 11, &s, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_session_new_json(p, "{\"permission_mode\":\"sometimes\"}", 31, &s, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8, robota_session_new_json(p, bad_utf8, 3, &s, &e_));
  s = make_session_json(p, OPTIONS);
  robota_provider_free(p);

  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8, robota_session_submit(s, bad_utf8, 3, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_submit(s, NULL, 3, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_get_messages(s, NULL, &e_));
  uint64_t id = 0;
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_subscribe(s, NULL, NULL, NULL, &id, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_subscribe(s, on_event, NULL, NULL, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_STATE, robota_session_unsubscribe(s, 12345, &e_));
  char *json = NULL;
  /* Subscription 0 needs "pull_events": true. */
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_STATE, robota_session_next_event(s, 0, 0, &json, &e_));
  CHECK(json == NULL);
  robota_session_free(s);

  /* evaluate_permission. */
  const char *ctx = "{\"mode\":\"default\",\"cwd\":\"/tmp\"}";
  const char *input = "{\"command\":\"ls\"}";
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_evaluate_permission("Bash", 4, input, strlen(input), ctx,
                                                             strlen(ctx), &json, &e_));
  CHECK(json != NULL && strstr(json, "\"decision\"") != NULL);
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_evaluate_permission("Bash", 4, input, strlen(input), "{\"mode\":1}", 10,
                                           &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_evaluate_permission("Bash", 4, "{", 1, ctx, strlen(ctx), &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8,
                robota_evaluate_permission(bad_utf8, 3, input, strlen(input), ctx, strlen(ctx),
                                           &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_evaluate_permission("Bash", 4, input, strlen(input), ctx, strlen(ctx),
                                           NULL, &e_));
  CHECK(json == NULL);
}

static const char *SLOW =
    "{\"type\":\"scripted\",\"turns\":[{\"text\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\"],"
    "\"delay_ms_per_chunk\":40}]}";

static void test_abort_from_callback(void) {
  robota_provider *p = make_provider(NULL, SLOW);
  robota_session *s = make_session_json(p, OPTIONS);
  robota_provider_free(p);
  counter c;
  counter_init(&c);
  c.session = s;
  atomic_store(&c.abort_on_delta, 1);
  uint64_t id = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe(s, on_event, &c, on_free, &id, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "go", 2, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 10000, &e_));
  CHECK(atomic_load(&c.interrupted) == 1);
  /* Blocking waits are refused on engine threads. */
  CHECK(atomic_load(&c.wait_status) == ROBOTA_STATUS_INVALID_STATE);
  robota_session_free(s);
  CHECK(atomic_load(&c.finalized) == 1);
}

static void test_free_with_work_in_flight(void) {
  robota_provider *p = make_provider(NULL, SLOW);
  robota_session *s = make_session_json(p, OPTIONS);
  robota_provider_free(p);
  counter c;
  counter_init(&c);
  uint64_t id = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe(s, on_event, &c, on_free, &id, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "go", 2, &e_));
  /* A second prompt waits in the queue; a third is refused. */
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "again", 5, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_QUEUE_FULL, robota_session_submit(s, "more", 4, &e_));
  sleep_ms(60);
  robota_session_free(s);
  CHECK(atomic_load(&c.finalized) == 1);
  int events = atomic_load(&c.events);
  sleep_ms(200);
  CHECK(atomic_load(&c.events) == events);
  CHECK(atomic_load(&c.finalized) == 1);
}

/* One writer per saved session: a second handle on a session that is open is refused with
 * ROBOTA_STATUS_SESSION_LOCKED naming the holder; after shutdown it can be resumed. A clean
 * session has nothing to report (the recovery report is JSON null). */
static void test_one_writer_per_saved_session(void) {
  robota_provider *p =
      make_provider(NULL, "{\"type\":\"scripted\",\"turns\":[{\"text\":\"saved\"}]}");
  const char *store = "\"persistence\":{\"store\":{\"sessions_dir\":\"one-writer/sessions\","
                      "\"logs_dir\":\"one-writer/logs\"}}";
  /* A fresh id: the test directory outlives the run. */
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char id[64];
  snprintf(id, sizeof id, "c-one-writer-%ld-%ld", (long)now.tv_sec, (long)now.tv_nsec);
  char created[512];
  char resumed[512];
  snprintf(created, sizeof created,
           "{\"system_prompt\":\"t\",\"load_project_context\":false,"
           "\"session_id\":\"%s\",%s}",
           id, store);
  snprintf(resumed, sizeof resumed,
           "{\"system_prompt\":\"t\",\"load_project_context\":false,"
           "\"resume_session_id\":\"%s\",%s}",
           id, store);
  robota_session *s = make_session_json(p, created);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "hi", 2, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 10000, &e_));

  robota_session *second = NULL;
  robota_error *err = NULL;
  CHECK(robota_session_new_json(p, resumed, strlen(resumed), &second, &err) ==
        ROBOTA_STATUS_SESSION_LOCKED);
  CHECK(second == NULL);
  CHECK(err != NULL && robota_error_code(err) == ROBOTA_STATUS_SESSION_LOCKED);
  CHECK(err != NULL && strstr(robota_error_message(err), "already open for writing") != NULL);
  robota_error_free(err);

  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_recovery_report(s, &json, &e_));
  CHECK(json != NULL && strcmp(json, "null") == 0);
  robota_string_free(json);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_shutdown(s, 10000, &e_));
  robota_session_free(s);

  second = make_session_json(p, resumed);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_messages(second, &json, &e_));
  CHECK(json != NULL && strstr(json, "\"saved\"") != NULL);
  robota_string_free(json);
  robota_session_free(second);
  robota_provider_free(p);
}

int main(void) {
  test_versions();
  test_full_turn_callback();
  test_pull_api();
  test_invalid_inputs();
  test_abort_from_callback();
  test_free_with_work_in_flight();
  test_one_writer_per_saved_session();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("test_basic: all checks passed\n");
  return 0;
}
