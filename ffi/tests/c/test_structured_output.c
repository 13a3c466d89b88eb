/* test_structured_output.c: queries with an `output_format` against mock-llm (ROBOTA_MOCK_URL,
 * scripted by ffi/tests/c_abi.rs): an answer valid first time, one fixed after the validation
 * follow-up, and one that never matches (ROBOTA_STATUS_STRUCTURED_OUTPUT after 1 + the limit
 * requests, counted by the Rust side from mock-llm's recorded requests); a malformed format is
 * refused when the query is created. */
#include "common.h"

#include <pthread.h>

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int done;
  robota_status status;
  char *text; /* the result JSON or the error message (malloc'd copy) */
} outcome;

static void on_result(void *user_data, const robota_error *error, const char *json, size_t len) {
  outcome *o = (outcome *)user_data;
  const char *text = error != NULL ? robota_error_message(error) : json;
  size_t n = error != NULL ? strlen(text) : len;
  pthread_mutex_lock(&o->lock);
  o->status = error != NULL ? robota_error_code(error) : ROBOTA_STATUS_OK;
  o->text = malloc(n + 1);
  if (o->text != NULL) {
    memcpy(o->text, text, n);
    o->text[n] = '\0';
  }
  o->done = 1;
  pthread_cond_signal(&o->cond);
  pthread_mutex_unlock(&o->lock);
}

static const char *SCHEMA =
    "{\"type\": \"json_schema\", \"schema\": {\"type\": \"object\", \"properties\": "
    "{\"city\": {\"type\": \"string\"}, \"population\": {\"type\": \"integer\", \"minimum\": 0}}, "
    "\"required\": [\"city\", \"population\"], \"additionalProperties\": false}}";

/* Runs one query with the output format and `retries`; returns its status, `*text` the result
 * JSON or the error message (owned by the caller). */
static robota_status run_structured(robota_provider *provider, int retries, char **text) {
  char options[1024];
  snprintf(options, sizeof options,
           "{\"load_project_context\": false, \"builtin_tools\": false, "
           "\"output_format\": %s, \"max_structured_output_retries\": %d}",
           SCHEMA, retries);
  robota_query *query = NULL;
  robota_error *err = NULL;
  robota_status s = robota_query_new(provider, options, strlen(options), &query, &err);
  if (s != ROBOTA_STATUS_OK) die("robota_query_new", s, err);
  outcome o;
  pthread_mutex_init(&o.lock, NULL);
  pthread_cond_init(&o.cond, NULL);
  o.done = 0;
  o.status = ROBOTA_STATUS_OK;
  o.text = NULL;
  const char *prompt = "Largest city of Portugal?";
  s = robota_query_run(query, prompt, strlen(prompt), on_result, &o, &err);
  if (s != ROBOTA_STATUS_OK) die("robota_query_run", s, err);
  pthread_mutex_lock(&o.lock);
  while (!o.done) pthread_cond_wait(&o.cond, &o.lock);
  pthread_mutex_unlock(&o.lock);
  robota_query_free(query);
  pthread_cond_destroy(&o.cond);
  pthread_mutex_destroy(&o.lock);
  *text = o.text;
  return o.status;
}

int main(void) {
  const char *url = getenv("ROBOTA_MOCK_URL");
  if (url == NULL) {
    fprintf(stderr, "ROBOTA_MOCK_URL is not set\n");
    return 2;
  }
  char provider_json[512];
  snprintf(provider_json, sizeof provider_json,
           "{\"type\": \"anthropic\", \"model\": \"claude-test\", \"api_key\": \"sk\", "
           "\"base_url\": \"%s\", \"max_retries\": 0}",
           url);
  robota_provider *provider = make_provider(NULL, provider_json);

  /* 1. Valid first time: the result JSON carries the value. */
  char *text = NULL;
  robota_status s = run_structured(provider, 2, &text);
  CHECK(s == ROBOTA_STATUS_OK);
  CHECK(contains(text, "\"structured_output\":{\"city\":\"Lisbon\",\"population\":545000}"));
  CHECK(contains(text, "\"status\":\"complete\""));
  free(text);

  /* 2. Invalid, then fixed after the follow-up. */
  s = run_structured(provider, 2, &text);
  CHECK(s == ROBOTA_STATUS_OK);
  CHECK(contains(text, "\"structured_output\":{\"city\":\"Porto\",\"population\":230000}"));
  free(text);

  /* 3. Never valid: a typed failure naming the last validation errors. */
  s = run_structured(provider, 2, &text);
  CHECK(s == ROBOTA_STATUS_STRUCTURED_OUTPUT);
  CHECK(contains(text, "did not match the output schema"));
  free(text);

  /* A malformed format is refused when the query is created; nothing is sent. */
  robota_query *query = NULL;
  const char *bad = "{\"output_format\": {\"type\": \"json_schema\", \"schema\": {\"type\": \"nope\"}}}";
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_query_new(provider, bad, strlen(bad), &query, &e_));
  CHECK(query == NULL);

  robota_provider_free(provider);
  if (failures == 0) printf("all checks passed\n");
  return failures == 0 ? 0 : 1;
}
