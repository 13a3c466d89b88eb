/* quickstart.c: one prompt against the scripted provider (no network), with a permission
 * callback and one host tool, printing every event.
 *
 * The scripted model first calls the host tool `lookup_weather`; the engine asks the
 * permission callback (which allows it once), runs the tool (answered here, in C), and the
 * model's second turn answers.
 *
 * Build (after `cargo build -p robota-ffi`):
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -I include examples/c/quickstart.c \
 *      -L target/debug -lrobota -Wl,-rpath,$PWD/target/debug -o quickstart
 */
#include <stdio.h>
#include <string.h>

#include "robota.h"

static void on_event(void *user_data, const robota_event *ev) {
  int *count = (int *)user_data;
  *count += 1;
  printf("event %llu %.*s: %.*s\n", (unsigned long long)ev->seq, (int)ev->kind_len, ev->kind,
         (int)ev->json_len, ev->json);
}

/* The permission callback: gets the request as JSON, answers through the completion. It may
 * also keep the completion and answer later, from any thread (e.g. after asking a person). */
static void on_permission(void *user_data, const char *request, size_t len,
                          robota_completion *completion) {
  (void)user_data;
  printf("permission asked: %.*s\n", (int)len, request);
  const char *answer = "{\"type\": \"allow_once\"}";
  robota_completion_resolve(completion, answer, strlen(answer), NULL);
}

/* The host tool: gets {"tool", "input", "tool_use_id", "cwd"}, answers {"content", ...}. */
static void on_lookup_weather(void *user_data, const char *request, size_t len,
                              robota_completion *completion) {
  (void)user_data;
  printf("tool called: %.*s\n", (int)len, request);
  const char *result = "{\"content\": \"sunny, 21C\"}";
  robota_completion_resolve(completion, result, strlen(result), NULL);
}

static int fail(const char *what, robota_status status, robota_error *err) {
  fprintf(stderr, "%s failed (%d): %s\n", what, (int)status, robota_error_message(err));
  robota_error_free(err);
  return 1;
}

int main(void) {
  robota_error *err = NULL;
  robota_status status;
  int events = 0;

  printf("robota %s, ABI %u.%u (header %d.%d)\n", robota_version(),
         (unsigned)(robota_abi_version() >> 16), (unsigned)(robota_abi_version() & 0xffff),
         ROBOTA_ABI_VERSION_MAJOR, ROBOTA_ABI_VERSION_MINOR);

  /* An explicit runtime, shut down at the end (a NULL runtime means the default one). */
  robota_runtime *runtime = NULL;
  status = robota_runtime_new(0, &runtime, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_runtime_new", status, err);

  const char *provider_json =
      "{\"type\": \"scripted\", \"turns\": ["
      " {\"tool_calls\": [{\"id\": \"call_1\", \"name\": \"lookup_weather\","
      "   \"input\": {\"city\": \"Paris\"}}]},"
      " {\"text\": \"It is sunny in Paris. Hello from C!\"}]}";
  robota_provider *provider = NULL;
  status = robota_provider_new_json(runtime, provider_json, strlen(provider_json), &provider,
                                    &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_provider_new_json", status, err);

  /* Options: data as JSON, host code as callbacks. */
  const char *options_json =
      "{\"system_prompt\": \"You are terse.\", \"load_project_context\": false,"
      " \"builtin_tools\": false}";
  robota_session_options *options = NULL;
  status = robota_session_options_new(options_json, strlen(options_json), &options, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_session_options_new", status, err);
  status = robota_session_options_set_permission_handler(options, on_permission, NULL, NULL,
                                                         &err);
  if (status != ROBOTA_STATUS_OK) return fail("set_permission_handler", status, err);
  const char *tool_spec =
      "{\"name\": \"lookup_weather\", \"description\": \"Looks up the weather of a city.\","
      " \"input_schema\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": "
      "\"string\"}}, \"required\": [\"city\"]}}";
  status = robota_session_options_add_tool(options, tool_spec, strlen(tool_spec),
                                           on_lookup_weather, NULL, NULL, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_session_options_add_tool", status, err);

  robota_session *session = NULL;
  status = robota_session_new(provider, options, &session, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_session_new", status, err);
  /* The session keeps what it needs. */
  robota_session_options_free(options);
  robota_provider_free(provider);

  uint64_t sub = 0;
  status = robota_session_subscribe(session, on_event, &events, NULL, &sub, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_session_subscribe", status, err);

  const char *prompt = "What is the weather in Paris?";
  status = robota_session_submit(session, prompt, strlen(prompt), &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_session_submit", status, err);

  status = robota_session_wait_idle(session, 10000, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_session_wait_idle", status, err);

  /* Stop delivery before reading: after unsubscribe returns no callback runs. */
  status = robota_session_unsubscribe(session, sub, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_session_unsubscribe", status, err);

  char *messages = NULL;
  status = robota_session_get_messages(session, &messages, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_session_get_messages", status, err);
  printf("messages: %s\n", messages);
  printf("%d events\n", events);
  robota_string_free(messages);

  robota_session_free(session);
  /* Waits for the engine's threads (nothing else uses the runtime any more). */
  robota_runtime_shutdown(runtime, 5000);
  return events > 0 ? 0 : 1;
}
