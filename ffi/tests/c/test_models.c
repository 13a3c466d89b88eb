/* test_models.c: the model catalog from C (robota_model_info, robota_list_models) and the
 * `fallback_model` session option against mock-llm (ROBOTA_MOCK_URL, scripted by
 * ffi/tests/c_abi.rs: HTTP 529, then text; the Rust side checks which model each request
 * named). Exits 0 when every check passes; prints each failure. */
#include "common.h"

/* robota_model_info for `model` (NUL-terminated); returns the JSON (owned) or NULL, `*status`
 * the call's status. */
static char *model_info(const char *model, robota_status *status) {
  char *json = NULL;
  robota_error *err = NULL;
  *status = robota_model_info(model, strlen(model), &json, &err);
  if (*status != ROBOTA_STATUS_OK) {
    CHECK(err != NULL && robota_error_code(err) == *status);
    CHECK(err != NULL && contains(robota_error_message(err), "model id"));
    CHECK(json == NULL);
  }
  robota_error_free(err);
  return json;
}

static void check_catalog(void) {
  robota_status s;
  char *json = model_info("claude-sonnet-4-5-20250929", &s);
  CHECK(s == ROBOTA_STATUS_OK);
  CHECK(contains(json, "\"model\":\"claude-sonnet-4-5-20250929\""));
  CHECK(contains(json, "\"known\":true"));
  CHECK(contains(json, "\"catalog_id\":\"claude-sonnet-4-5\""));
  CHECK(contains(json, "\"context_window\":200000"));
  CHECK(contains(json, "\"max_output\":64000"));
  CHECK(contains(json, "\"input_per_mtok\":3.0"));
  CHECK(contains(json, "\"defaults\":[]"));
  robota_string_free(json);

  json = model_info("us.anthropic.claude-sonnet-4-5-20250929-v1:0", &s);
  CHECK(s == ROBOTA_STATUS_OK);
  CHECK(contains(json, "\"known\":true"));
  CHECK(contains(json, "\"catalog_id\":\"claude-sonnet-4-5\""));
  CHECK(contains(json, "\"context_window\":200000"));
  robota_string_free(json);

  json = model_info("my-local-llama", &s);
  CHECK(s == ROBOTA_STATUS_OK);
  CHECK(contains(json, "\"known\":false"));
  CHECK(contains(json, "\"defaults\":[\"context_window\",\"max_output\",\"price\"]"));
  CHECK(!contains(json, "\"price\":{"));
  CHECK(!contains(json, "catalog_id"));
  robota_string_free(json);

  /* Bad input: empty, blank, overlong, invalid UTF-8, NULL. */
  CHECK(model_info("", &s) == NULL && s == ROBOTA_STATUS_INVALID_ARGUMENT);
  CHECK(model_info("   ", &s) == NULL && s == ROBOTA_STATUS_INVALID_ARGUMENT);
  char long_id[1100];
  memset(long_id, 'x', sizeof long_id - 1);
  long_id[sizeof long_id - 1] = '\0';
  CHECK(model_info(long_id, &s) == NULL && s == ROBOTA_STATUS_INVALID_ARGUMENT);
  char *out = NULL;
  const char bad_utf8[] = {'c', (char)0xff, 'x'};
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8, robota_model_info(bad_utf8, sizeof bad_utf8, &out, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_model_info(NULL, 5, &out, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_model_info("m", 1, NULL, &e_));
  CHECK(out == NULL);
  /* NULL with length 0 is the empty id. */
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT, robota_model_info(NULL, 0, &out, &e_));

  /* The list, whole and by provider. */
  char *all = NULL, *anthropic = NULL, *none = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_list_models(NULL, 0, &all, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_list_models("anthropic", 9, &anthropic, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_list_models("nobody", 6, &none, &e_));
  CHECK(contains(all, "\"provider\":\"openai\"") && contains(all, "\"provider\":\"anthropic\""));
  CHECK(contains(anthropic, "\"catalog_id\":\"claude-sonnet-4-5\""));
  CHECK(!contains(anthropic, "\"provider\":\"openai\""));
  CHECK(none != NULL && strcmp(none, "[]") == 0);
  robota_string_free(all);
  robota_string_free(anthropic);
  robota_string_free(none);
}

/* Counts `warning` session events from the fallback. */
static void on_event(void *user_data, const robota_event *ev) {
  atomic_int *warnings = (atomic_int *)user_data;
  if (contains(ev->json, "\"type\":\"warning\"") && contains(ev->json, "\"source\":\"fallback_model\""))
    atomic_fetch_add(warnings, 1);
}

static void check_fallback(const char *url) {
  char provider_json[512];
  snprintf(provider_json, sizeof provider_json,
           "{\"type\": \"anthropic\", \"model\": \"claude-opus-4-6\", \"api_key\": \"sk\", "
           "\"base_url\": \"%s\", \"max_retries\": 0}",
           url);
  robota_provider *provider = make_provider(NULL, provider_json);
  const char *options =
      "{\"load_project_context\": false, \"builtin_tools\": false, "
      "\"fallback_model\": \"claude-haiku-4-5\"}";
  robota_session *session = NULL;
  robota_error *err = NULL;
  robota_status s = robota_session_new_json(provider, options, strlen(options), &session, &err);
  if (s != ROBOTA_STATUS_OK) die("robota_session_new_json", s, err);
  atomic_int warnings;
  atomic_init(&warnings, 0);
  uint64_t id = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe(session, on_event, &warnings, NULL, &id, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(session, "hello", 5, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(session, 10000, &e_));
  char *messages = messages_of(session);
  CHECK(contains(messages, "from the fallback"));
  robota_string_free(messages);
  CHECK(atomic_load(&warnings) == 1);
  robota_session_free(session);

  /* The main model as its own fallback is refused when the session is created. */
  const char *same = "{\"load_project_context\": false, \"fallback_model\": \"claude-opus-4-6\"}";
  session = NULL;
  s = robota_session_new_json(provider, same, strlen(same), &session, &err);
  CHECK(s == ROBOTA_STATUS_INVALID_ARGUMENT && session == NULL);
  CHECK(err != NULL && contains(robota_error_message(err), "fallback_model"));
  robota_error_free(err);
  robota_provider_free(provider);
}

int main(void) {
  const char *url = getenv("ROBOTA_MOCK_URL");
  if (url == NULL) {
    fprintf(stderr, "ROBOTA_MOCK_URL is not set\n");
    return 2;
  }
  check_catalog();
  check_fallback(url);
  if (failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
