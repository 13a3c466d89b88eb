/* test_command_context.c: a command written in C acts on its session through the live command
 * context (robota_completion_command_context + robota_command_context_call): it reads the
 * state, writes a settings file, switches to plan mode, compacts and clears the conversation
 * (against mock-llm, ROBOTA_MOCK_URL), and returns typed effects. A context kept past its
 * command is refused with ROBOTA_STATUS_COMMAND; bad operations are typed errors. Run by
 * ffi/tests/c_abi.rs with the session's directory in ROBOTA_TEST_DIR. */
#include "common.h"

static const robota_command_context *kept = NULL;
static atomic_int calls;

/* Runs one operation; returns its JSON (owned) or NULL after recording the status. */
static char *op(const robota_command_context *ctx, const char *json, robota_status expected) {
  char *out = NULL;
  robota_error *err = NULL;
  robota_status status = robota_command_context_call(ctx, json, strlen(json), &out, &err);
  if (status != expected) {
    fprintf(stderr, "op %s returned %d (expected %d): %s\n", json, (int)status, (int)expected,
            robota_error_message(err));
    failures++;
  }
  robota_error_free(err);
  return out;
}

static void on_tidy(void *user_data, const char *request, size_t len, robota_completion *c) {
  (void)user_data;
  (void)request;
  (void)len;
  atomic_fetch_add(&calls, 1);
  const robota_command_context *ctx = robota_completion_command_context(c);
  CHECK(ctx != NULL);
  kept = ctx;
  char *before = op(ctx, "{\"op\":\"state\"}", ROBOTA_STATUS_OK);
  CHECK(contains(before, "\"permission_mode\":\"default\""));
  CHECK(contains(before, "\"message_count\":4"));
  robota_string_free(before);
  char *path = op(ctx,
                  "{\"op\":\"update_settings\",\"scope\":\"localSettings\","
                  "\"patch\":{\"language\":\"ko\"}}",
                  ROBOTA_STATUS_OK);
  CHECK(contains(path, "settings.local.json"));
  robota_string_free(path);
  char *settings = op(ctx, "{\"op\":\"read_settings\",\"scope\":\"localSettings\"}", ROBOTA_STATUS_OK);
  CHECK(contains(settings, "\"language\":\"ko\""));
  robota_string_free(settings);
  CHECK(op(ctx, "{\"op\":\"set_permission_mode\",\"mode\":\"yolo\"}",
           ROBOTA_STATUS_INVALID_ARGUMENT) == NULL);
  CHECK(op(ctx, "{\"op\":\"explode\"}", ROBOTA_STATUS_INVALID_JSON) == NULL);
  robota_string_free(op(ctx, "{\"op\":\"set_permission_mode\",\"mode\":\"plan\"}", ROBOTA_STATUS_OK));
  char *compacted = op(ctx, "{\"op\":\"compact\",\"instructions\":\"keep names\"}", ROBOTA_STATUS_OK);
  CHECK(contains(compacted, "\"messages_before\":4"));
  robota_string_free(compacted);
  robota_string_free(op(ctx, "{\"op\":\"clear\"}", ROBOTA_STATUS_OK));
  char *after = op(ctx, "{\"op\":\"state\"}", ROBOTA_STATUS_OK);
  CHECK(contains(after, "\"permission_mode\":\"plan\""));
  CHECK(contains(after, "\"message_count\":0"));
  robota_string_free(after);
  resolve_str(c, "{\"message\":\"tidied\",\"effects\":[{\"type\":\"conversation_history_cleared\"}]}");
}

int main(void) {
  const char *url = getenv("ROBOTA_MOCK_URL");
  const char *dir = getenv("ROBOTA_TEST_DIR");
  if (url == NULL || dir == NULL) {
    fprintf(stderr, "ROBOTA_MOCK_URL and ROBOTA_TEST_DIR are required\n");
    return 1;
  }
  atomic_init(&calls, 0);
  robota_runtime *rt = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_runtime_new(2, &rt, &e_));
  if (rt == NULL) return 1;
  char config[512];
  snprintf(config, sizeof config,
           "{\"type\":\"anthropic\",\"model\":\"mock-model\",\"api_key\":\"test-key\","
           "\"base_url\":\"%s\",\"max_retries\":0}",
           url);
  char options[1024];
  snprintf(options, sizeof options,
           "{\"cwd\":\"%s/project\",\"home\":\"%s/home\",\"load_project_context\":false,"
           "\"builtin_tools\":false}",
           dir, dir);
  robota_provider *p = make_provider(rt, config);
  robota_session_options *o = make_options(options);
  const char *descriptor =
      "{\"name\":\"tidy\",\"description\":\"Plan mode, compact, clear\",\"lifecycle\":\"blocking\"}";
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_add_command(
                                      o, descriptor, strlen(descriptor), on_tidy, NULL, NULL, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);

  const char *prompts[] = {"one", "two"};
  for (int i = 0; i < 2; i++) {
    EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, prompts[i], strlen(prompts[i]), &e_));
    EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 20000, &e_));
  }
  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_execute_command_blocking(
                                      s, "tidy", 4, NULL, 0, 20000, &json, &e_));
  CHECK(contains(json, "\"success\":true"));
  CHECK(contains(json, "conversation_history_cleared"));
  robota_string_free(json);
  json = NULL;
  CHECK(atomic_load(&calls) == 1);
  char *messages = messages_of(s);
  CHECK(messages != NULL && strcmp(messages, "[]") == 0);
  robota_string_free(messages);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_execute_command_blocking(
                                      s, "permissions", 11, NULL, 0, 20000, &json, &e_));
  CHECK(contains(json, "plan"));
  robota_string_free(json);
  json = NULL;

  /* The context is valid only while the command runs. */
  EXPECT_STATUS(ROBOTA_STATUS_COMMAND,
                robota_command_context_call(kept, "{\"op\":\"clear\"}", 14, &json, &e_));
  CHECK(json == NULL);
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_command_context_call(NULL, "{\"op\":\"clear\"}", 14, &json, &e_));
  CHECK(robota_completion_command_context(NULL) == NULL);

  robota_session_free(s);
  robota_runtime_shutdown(rt, 5000);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("test_command_context: all checks passed\n");
  return 0;
}
