/* test_background.c: the model (a mock-llm at ROBOTA_MOCK_URL whose first turn calls Bash with
 * `run_in_background: true` on `sleep 300`) starts a background task; from C the host lists it,
 * gets it with its pid, waits for it briefly (still running), is refused closing it while it
 * runs, cancels it (its process is gone afterwards) and closes it; unknown ids and streams are
 * ROBOTA_STATUS_INVALID_ARGUMENT. Built with -std=c11 -Wall -Wextra -Werror -pedantic and run by
 * ffi/tests/c_abi.rs. Exits 0 when every check passes. */
#include "common.h"

#include <errno.h>
#include <signal.h>
#include <sys/types.h>

int main(void) {
  const char *url = getenv("ROBOTA_MOCK_URL");
  const char *dir = getenv("ROBOTA_TEST_DIR");
  if (url == NULL || dir == NULL) {
    fprintf(stderr, "test_background: ROBOTA_MOCK_URL and ROBOTA_TEST_DIR must be set\n");
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
           " \"load_project_context\": false,"
           " \"settings\": {\"permissions\": {\"allow\": [\"Bash(sleep:*)\"]}}}",
           dir, dir);
  robota_provider *p = make_provider(NULL, config);
  robota_session *s = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_new_json(p, options, strlen(options), &s, &e_));
  robota_provider_free(p);
  if (s == NULL) return 1;

  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "start", 5, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 20000, &e_));

  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_background_tasks(s, &json, &e_));
  CHECK(json != NULL && strstr(json, "\"id\":\"bash_1\"") != NULL);
  CHECK(json != NULL && strstr(json, "\"status\":\"running\"") != NULL);
  robota_string_free(json);

  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_background_task(s, "bash_1", 6, &json, &e_));
  const char *pid_field = json == NULL ? NULL : strstr(json, "\"pid\":");
  long pid = pid_field == NULL ? 0 : strtol(pid_field + 6, NULL, 10);
  CHECK(pid > 0);
  CHECK(json != NULL && strstr(json, "\"command\":\"sleep 300\"") != NULL);
  robota_string_free(json);

  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_wait_background_task(s, "bash_1", 6, 100, &json, &e_));
  CHECK(json != NULL && strstr(json, "\"status\":\"running\"") != NULL);
  robota_string_free(json);

  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_close_background_task(s, "bash_1", 6, &json, &e_));
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_read_background_task_log(s, "bash_1", 6, 7, 0, 100, &json, &e_));

  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_cancel_background_task(s, "bash_1", 6, &json, &e_));
  CHECK(json != NULL && strstr(json, "\"status\":\"cancelled\"") != NULL);
  robota_string_free(json);
  CHECK(pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH);

  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_read_background_task_log(s, "bash_1", 6, 0, 0, 100, &json, &e_));
  CHECK(json != NULL && strstr(json, "\"total_bytes\":0") != NULL);
  robota_string_free(json);

  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_close_background_task(s, "bash_1", 6, &json, &e_));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_get_background_task(s, "bash_1", 6, &json, &e_));
  robota_session_free(s);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("test_background: all checks passed\n");
  return 0;
}
