/* query.c: one query (one full agent turn) and its result as JSON.
 *
 * Offline by default: the scripted provider answers. With ROBOTA_BASE_URL set (e.g. to a
 * mock-llm server), the Anthropic provider talks to that URL instead (model: ROBOTA_MODEL,
 * default "claude-sonnet-4-6"; key: ANTHROPIC_API_KEY, default "test-key").
 *
 * Usage: query [prompt]
 *
 * Build (after `cargo build -p robota-ffi`):
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -pthread -I include examples/c/query.c \
 *      -L target/debug -lrobota -Wl,-rpath,$PWD/target/debug -o query
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robota.h"

/* Where the result callback (on an engine thread) leaves the result for main. */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int done;
  robota_status status;
  char *text; /* the result JSON or the error message (malloc'd copy) */
} outcome;

static char *copy(const char *s) {
  size_t n = strlen(s) + 1;
  char *out = malloc(n);
  if (out != NULL) memcpy(out, s, n);
  return out;
}

/* Called exactly once; `json` and `error` are borrowed for the call: copy what you keep. */
static void on_result(void *user_data, const robota_error *error, const char *json,
                      size_t len) {
  outcome *o = (outcome *)user_data;
  (void)len;
  pthread_mutex_lock(&o->lock);
  o->status = error != NULL ? robota_error_code(error) : ROBOTA_STATUS_OK;
  o->text = copy(error != NULL ? robota_error_message(error) : json);
  o->done = 1;
  pthread_cond_signal(&o->cond);
  pthread_mutex_unlock(&o->lock);
}

static int fail(const char *what, robota_status status, robota_error *err) {
  fprintf(stderr, "%s failed (%d): %s\n", what, (int)status, robota_error_message(err));
  robota_error_free(err);
  return 1;
}

int main(int argc, char **argv) {
  const char *prompt = argc > 1 ? argv[1] : "What is robota?";
  robota_error *err = NULL;
  robota_status status;

  char provider_json[1024];
  const char *base_url = getenv("ROBOTA_BASE_URL");
  if (base_url != NULL && base_url[0] != '\0') {
    const char *model = getenv("ROBOTA_MODEL");
    const char *key = getenv("ANTHROPIC_API_KEY");
    snprintf(provider_json, sizeof provider_json,
             "{\"type\": \"anthropic\", \"model\": \"%s\", \"api_key\": \"%s\", "
             "\"base_url\": \"%s\"}",
             model ? model : "claude-sonnet-4-6", key ? key : "test-key", base_url);
  } else {
    snprintf(provider_json, sizeof provider_json, "%s",
             "{\"type\": \"scripted\", \"turns\": [{\"text\": "
             "\"robota is an embeddable agent engine.\", "
             "\"usage\": {\"input_tokens\": 12, \"output_tokens\": 7}}]}");
  }

  robota_provider *provider = NULL;
  status = robota_provider_new_json(NULL, provider_json, strlen(provider_json), &provider, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_provider_new_json", status, err);

  const char *options =
      "{\"system_prompt\": \"Answer in one sentence.\", \"load_project_context\": false,"
      " \"builtin_tools\": false}";
  robota_query *query = NULL;
  status = robota_query_new(provider, options, strlen(options), &query, &err);
  robota_provider_free(provider);
  if (status != ROBOTA_STATUS_OK) return fail("robota_query_new", status, err);

  outcome o;
  pthread_mutex_init(&o.lock, NULL);
  pthread_cond_init(&o.cond, NULL);
  o.done = 0;
  o.status = ROBOTA_STATUS_OK;
  o.text = NULL;
  status = robota_query_run(query, prompt, strlen(prompt), on_result, &o, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_query_run", status, err);

  pthread_mutex_lock(&o.lock);
  while (!o.done) pthread_cond_wait(&o.cond, &o.lock);
  pthread_mutex_unlock(&o.lock);

  int code = 0;
  if (o.status == ROBOTA_STATUS_OK) {
    printf("%s\n", o.text ? o.text : "");
  } else {
    fprintf(stderr, "query failed (%d): %s\n", (int)o.status, o.text ? o.text : "");
    code = 1;
  }
  free(o.text);
  robota_query_free(query);
  pthread_cond_destroy(&o.cond);
  pthread_mutex_destroy(&o.lock);
  return code;
}
