/* quickstart.c: one prompt against the scripted provider, printing every event.
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

  const char *provider_json = "{\"type\": \"scripted\", \"turns\": [{\"text\": \"Hello from C!\"}]}";
  robota_provider *provider = NULL;
  /* NULL runtime: the library's default runtime. */
  status = robota_provider_new_json(NULL, provider_json, strlen(provider_json), &provider, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_provider_new_json", status, err);

  const char *options = "{\"system_prompt\": \"You are terse.\", \"load_project_context\": false}";
  robota_session *session = NULL;
  status = robota_session_new_json(provider, options, strlen(options), &session, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_session_new_json", status, err);
  robota_provider_free(provider); /* the session keeps the provider alive */

  uint64_t sub = 0;
  status = robota_session_subscribe(session, on_event, &events, NULL, &sub, &err);
  if (status != ROBOTA_STATUS_OK) return fail("robota_session_subscribe", status, err);

  const char *prompt = "Say hello.";
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
  return events > 0 ? 0 : 1;
}
