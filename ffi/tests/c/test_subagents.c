/* test_subagents.c: host code starts subagents from C against a mock-llm at ROBOTA_MOCK_URL
 * (turns: a foreground answer, a background report, then a slow answer). The host runs one
 * subagent in the foreground on a model alias (the report names the mapped model), starts one
 * in the background and waits for it (its log is the report), starts a slow one and cancels it;
 * text that is not JSON, a request without a prompt, an unknown agent and an unknown isolation
 * are typed errors. Built with -std=c11 -Wall -Wextra -Werror -pedantic and run by
 * ffi/tests/c_abi.rs. Exits 0 when every check passes. */
#include "common.h"

static robota_status start(robota_session *s, const char *request, char **json,
                           robota_error **err) {
  *json = NULL;
  return robota_session_start_background_subagent(s, request, strlen(request), json, err);
}

int main(void) {
  const char *url = getenv("ROBOTA_MOCK_URL");
  const char *dir = getenv("ROBOTA_TEST_DIR");
  if (url == NULL || dir == NULL) {
    fprintf(stderr, "test_subagents: ROBOTA_MOCK_URL and ROBOTA_TEST_DIR must be set\n");
    return 2;
  }
  char config[512];
  snprintf(config, sizeof config,
           "{\"type\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"api_key\":\"test-key\","
           "\"base_url\":\"%s\",\"max_retries\":0}",
           url);
  char options[1024];
  snprintf(options, sizeof options,
           "{\"cwd\": \"%s\", \"home\": \"%s\", \"system_prompt\": \"test\","
           " \"load_project_context\": false}",
           dir, dir);
  robota_provider *p = make_provider(NULL, config);
  robota_session *s = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_new_json(p, options, strlen(options), &s, &e_));
  robota_provider_free(p);
  if (s == NULL) return 1;

  /* Foreground: the report, on the model the alias maps to. */
  const char *foreground = "{\"prompt\": \"answer now\", \"model\": \"haiku\"}";
  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_run_subagent(s, foreground, strlen(foreground), &json, &e_));
  CHECK(json != NULL && strstr(json, "\"response\":\"FOREGROUND-REPORT\"") != NULL);
  CHECK(json != NULL && strstr(json, "\"model\":\"claude-haiku-4-5\"") != NULL);
  CHECK(json != NULL && strstr(json, "\"agent_type\":\"general-purpose\"") != NULL);
  robota_string_free(json);

  /* Background: a task at once, its report in its log once it ends. */
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                start(s, "{\"prompt\": \"report back\", \"agent_type\": \"Explore\"}", &json, &e_));
  CHECK(json != NULL && strstr(json, "\"id\":\"agent_1\"") != NULL);
  CHECK(json != NULL && strstr(json, "\"kind\":\"agent\"") != NULL);
  CHECK(json != NULL && strstr(json, "\"kind\":\"host\"") != NULL);
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_wait_background_task(s, "agent_1", 7, 20000, &json, &e_));
  CHECK(json != NULL && strstr(json, "\"status\":\"completed\"") != NULL);
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_read_background_task_log(s, "agent_1", 7, 0, 0, 4096, &json, &e_));
  CHECK(json != NULL && strstr(json, "\"text\":\"BACKGROUND-REPORT\"") != NULL);
  robota_string_free(json);

  /* A slow one, cancelled while it runs. */
  EXPECT_STATUS(ROBOTA_STATUS_OK, start(s, "{\"prompt\": \"take your time\"}", &json, &e_));
  CHECK(json != NULL && strstr(json, "\"id\":\"agent_2\"") != NULL);
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_wait_background_task(s, "agent_2", 7, 300, &json, &e_));
  CHECK(json != NULL && strstr(json, "\"status\":\"running\"") != NULL);
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_cancel_background_task(s, "agent_2", 7, &json, &e_));
  CHECK(json != NULL && strstr(json, "\"status\":\"cancelled\"") != NULL);
  robota_string_free(json);

  /* Bad requests are typed errors, and nothing starts. */
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON, start(s, "not json", &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT, start(s, "{\"agent_type\": \"Explore\"}", &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                start(s, "{\"prompt\": \"x\", \"agent_type\": \"no-such-agent\"}", &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                start(s, "{\"prompt\": \"x\", \"isolation\": \"vm\"}", &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_run_subagent(s, "{}", 2, &json, &e_));
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_background_tasks(s, &json, &e_));
  CHECK(json != NULL && strstr(json, "agent_3") == NULL);
  robota_string_free(json);
  robota_session_free(s);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("test_subagents: all checks passed\n");
  return 0;
}
