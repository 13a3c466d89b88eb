/* test_claude_tools.c: a model call to TodoWrite over HTTP (ROBOTA_MOCK_URL, a mock-llm whose
 * first turn calls TodoWrite and second MultiEdit) delivers a `todo_update` event with the list,
 * and MultiEdit edits the file in the session's directory. Built with -std=c11 -Wall -Wextra
 * -Werror -pedantic and run by ffi/tests/c_abi.rs. Exits 0 when every check passes. */
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
  char options[1024];
  snprintf(options, sizeof options,
           "{\"cwd\": \"%s\", \"home\": \"%s\", \"system_prompt\": \"test\","
           " \"load_project_context\": false, \"permission_mode\": \"acceptEdits\"}",
           dir, dir);
  robota_provider *p = make_provider(NULL, config);
  robota_session *s = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_new_json(p, options, strlen(options), &s, &e_));
  robota_provider_free(p);
  if (s == NULL) return 1;

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
  robota_string_free(json);
  robota_session_free(s);

  char path[512];
  snprintf(path, sizeof path, "%s/notes.txt", dir);
  FILE *f = fopen(path, "r");
  char text[64] = {0};
  CHECK(f != NULL);
  if (f != NULL) {
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
  }
  CHECK(strcmp(text, "one 1\ntwo 2\n") == 0);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("test_claude_tools: all checks passed\n");
  return 0;
}
