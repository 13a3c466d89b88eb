/* test_claude_tools.c: a model call to TodoWrite over HTTP (ROBOTA_MOCK_URL, a mock-llm whose
 * first turn calls TodoWrite, second MultiEdit on notes.txt, third MultiEdit on locked.txt)
 * delivers a `todo_update` event with the list, and MultiEdit edits the file in the session's
 * directory. Settings given with the options add a PreToolUse command hook (it logs each call's
 * input to hooked.jsonl) and an `Edit(./locked.txt)` deny rule, which MultiEdit obeys like Edit
 * (refused before any hook runs). Its allow rule `Bash*` cannot be parsed: the session still
 * opens, and robota_session_get_warnings names the rule and its JSON path.
 * Built with -std=c11 -Wall -Wextra -Werror -pedantic and run by ffi/tests/c_abi.rs. Exits 0
 * when every check passes. */
#include "common.h"

#include <unistd.h>

typedef struct {
  atomic_int todo_updates;
  atomic_int completes;
  atomic_int todo_ok; /* the list arrived with both tasks in order */
} seen;

static int kind_is(const robota_event *ev, const char *kind) {
  return ev->kind_len == strlen(kind) && memcmp(ev->kind, kind, ev->kind_len) == 0;
}

static void on_event(void *user_data, const robota_event *ev) {
  seen *s = (seen *)user_data;
  if (kind_is(ev, "todo_update")) {
    atomic_fetch_add(&s->todo_updates, 1);
    const char *first = strstr(ev->json, "\"content\":\"Write the test\"");
    const char *second = strstr(ev->json, "\"content\":\"Run it\"");
    if (first != NULL && second != NULL && first < second &&
        strstr(ev->json, "\"status\":\"in_progress\"") != NULL &&
        strstr(ev->json, "\"active_form\":\"Writing the test\"") != NULL)
      atomic_store(&s->todo_ok, 1);
  }
  if (kind_is(ev, "complete")) atomic_fetch_add(&s->completes, 1);
}

/* Reads the file at `path` into `out` (NUL-terminated, at most `size - 1` bytes). */
static int read_small(const char *path, char *out, size_t size) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  size_t n = fread(out, 1, size - 1, f);
  out[n] = '\0';
  fclose(f);
  return 1;
}

int main(void) {
  const char *url = getenv("ROBOTA_MOCK_URL");
  const char *dir = getenv("ROBOTA_TEST_DIR");
  if (url == NULL || dir == NULL) {
    fprintf(stderr, "test_claude_tools: ROBOTA_MOCK_URL and ROBOTA_TEST_DIR must be set\n");
    return 2;
  }
  char config[512];
  snprintf(config, sizeof config,
           "{\"type\":\"anthropic\",\"model\":\"mock-model\",\"api_key\":\"test-key\","
           "\"base_url\":\"%s\",\"max_retries\":0}",
           url);
  char options[2048];
  snprintf(options, sizeof options,
           "{\"cwd\": \"%s\", \"home\": \"%s\", \"system_prompt\": \"test\","
           " \"load_project_context\": false, \"permission_mode\": \"acceptEdits\","
           " \"settings\": {\"permissions\": {\"allow\": [\"Bash*\"],"
           " \"deny\": [\"Edit(./locked.txt)\"]},"
           " \"hooks\": {\"PreToolUse\": [{\"matcher\": \"TodoWrite|MultiEdit\", \"hooks\":"
           " [{\"type\": \"command\", \"command\":"
           " \"cat >> \\\"$CLAUDE_PROJECT_DIR/hooked.jsonl\\\"; echo >> \\\"$CLAUDE_PROJECT_DIR/hooked.jsonl\\\"\"}]}]}}}",
           dir, dir);
  robota_provider *p = make_provider(NULL, config);
  robota_session *s = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_new_json(p, options, strlen(options), &s, &e_));
  robota_provider_free(p);
  if (s == NULL) return 1;

  char *warnings = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_warnings(s, &warnings, &e_));
  CHECK(warnings != NULL && strstr(warnings, "\"json_path\":\"permissions.allow[0]\"") != NULL);
  CHECK(warnings != NULL && strstr(warnings, "invalid permission rule `Bash*`") != NULL);
  CHECK(warnings != NULL && strstr(warnings, "\"kind\":\"permission_rule\"") != NULL);
  robota_string_free(warnings);

  seen counts;
  atomic_init(&counts.todo_updates, 0);
  atomic_init(&counts.completes, 0);
  atomic_init(&counts.todo_ok, 0);
  uint64_t id = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe(s, on_event, &counts, NULL, &id, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "plan", 4, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 20000, &e_));
  CHECK(atomic_load(&counts.completes) == 1);
  CHECK(atomic_load(&counts.todo_updates) == 1);
  CHECK(atomic_load(&counts.todo_ok) == 1);

  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_messages(s, &json, &e_));
  CHECK(json != NULL && strstr(json, "Todos have been modified successfully") != NULL);
  CHECK(json != NULL && strstr(json, "Applied 2 edits") != NULL);
  CHECK(json != NULL && strstr(json, "Edit(./locked.txt)") != NULL);
  robota_string_free(json);
  robota_session_free(s);

  char text[64] = {0};
  char path[512];
  snprintf(path, sizeof path, "%s/locked.txt", dir);
  CHECK(read_small(path, text, sizeof text) && strcmp(text, "keep\n") == 0);
  snprintf(path, sizeof path, "%s/hooked.jsonl", dir);
  char hooked[8192] = {0};
  CHECK(read_small(path, hooked, sizeof hooked));
  const char *todo = strstr(hooked, "\"tool_name\":\"TodoWrite\"");
  const char *multi = strstr(hooked, "\"tool_name\":\"MultiEdit\"");
  CHECK(todo != NULL && multi != NULL && todo < multi);
  /* The deny rule refused the second MultiEdit before any hook ran, as it does for Edit. */
  CHECK(multi != NULL && strstr(multi + 1, "\"tool_name\":\"MultiEdit\"") == NULL);

  snprintf(path, sizeof path, "%s/notes.txt", dir);
  CHECK(read_small(path, text, sizeof text) && strcmp(text, "one 1\ntwo 2\n") == 0);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("test_claude_tools: all checks passed\n");
  return 0;
}
