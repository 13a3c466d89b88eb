/* test_mcp_oauth.c: the browser step of a remote MCP server's OAuth handed to a C callback
 * (robota_session_options_set_mcp_authorization_handler). The server is the real
 * OAuth-protected test server (ROBOTA_OAUTH_MCP_URL), which approves every authorization at
 * once; the callback records the URL and lets a "browser" (curl, on a thread of its own)
 * follow it to the session's redirect listener. The session connects, the model behind
 * mock-llm (ROBOTA_MOCK_URL) calls the server's tool, the tokens are kept under the home
 * folder (ROBOTA_TEST_HOME) and a second session reuses them without asking.
 * Built with -std=c11 -Wall -Wextra -Werror -pedantic -pthread and run by ffi/tests/c_abi.rs.
 * Exits 0 when every check passes. */
#include "common.h"

#include <pthread.h>

typedef struct {
  atomic_int calls;
  atomic_int finalized;
  atomic_int bad_request;
  char url[4096];
} browser;

static void *follow(void *arg) {
  char *command = (char *)arg;
  if (system(command) != 0) fprintf(stderr, "the browser failed: %s\n", command);
  free(command);
  return NULL;
}

static void browser_free(void *user_data) {
  atomic_fetch_add(&((browser *)user_data)->finalized, 1);
}

static void on_authorization(void *user_data, const char *request, size_t len,
                             robota_completion *c) {
  browser *b = (browser *)user_data;
  atomic_fetch_add(&b->calls, 1);
  const char *url = request == NULL ? NULL : strstr(request, "\"url\":\"");
  const char *end = url == NULL ? NULL : strchr(url + 7, '"');
  if (request == NULL || strlen(request) != len || !contains(request, "\"server\":\"secure\"") ||
      end == NULL || (size_t)(end - url - 7) >= sizeof b->url) {
    fprintf(stderr, "unexpected request: %s\n", request == NULL ? "(null)" : request);
    atomic_fetch_add(&b->bad_request, 1);
    resolve_str(c, "null");
    return;
  }
  memcpy(b->url, url + 7, (size_t)(end - url - 7));
  b->url[end - url - 7] = '\0';
  /* The callback must return quickly: the redirect needs the session's listener. */
  size_t size = strlen(b->url) + 64;
  char *command = malloc(size);
  if (command == NULL) {
    resolve_str(c, "null");
    return;
  }
  snprintf(command, size, "curl -sL --max-time 20 -o /dev/null '%s'", b->url);
  pthread_t thread;
  if (pthread_create(&thread, NULL, follow, command) == 0) {
    pthread_detach(thread);
  } else {
    free(command);
  }
  resolve_str(c, "null");
}

static robota_session *open_session(robota_runtime *rt, const char *mock_url, const char *server_url,
                                    const char *home, browser *b) {
  char config[512];
  snprintf(config, sizeof config,
           "{\"type\":\"anthropic\",\"model\":\"mock-model\",\"api_key\":\"test-key\","
           "\"base_url\":\"%s\",\"max_retries\":0}",
           mock_url);
  char options_json[2048];
  snprintf(options_json, sizeof options_json,
           "{\"system_prompt\": \"test\", \"load_project_context\": false, \"builtin_tools\": "
           "false, \"home\": \"%s\", \"settings\": {\"permissions\": {\"allow\": "
           "[\"mcp__secure\"]}}, \"mcp_servers\": {\"secure\": {\"type\": \"http\", \"url\": "
           "\"%s\"}}}",
           home, server_url);
  robota_session_options *o = make_options(options_json);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_set_mcp_authorization_handler(
                                      o, on_authorization, b, browser_free, &e_));
  robota_provider *p = make_provider(rt, config);
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  return s;
}

static void test_authorized_through_the_callback(robota_runtime *rt, const char *mock_url,
                                                 const char *server_url, const char *home) {
  browser b;
  atomic_init(&b.calls, 0);
  atomic_init(&b.finalized, 0);
  atomic_init(&b.bad_request, 0);
  b.url[0] = '\0';
  for (int run = 0; run < 2; run++) {
    robota_session *s = open_session(rt, mock_url, server_url, home, &b);
    char *servers = NULL;
    EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_for_mcp_servers(s, 30000, &e_));
    EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_mcp_servers(s, &servers, &e_));
    CHECK(contains(servers, "\"state\":\"connected\""));
    CHECK(contains(servers, "mcp__secure__add"));
    robota_string_free(servers);
    const char *prompt = "add";
    EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, prompt, strlen(prompt), &e_));
    EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 20000, &e_));
    char *messages = messages_of(s);
    CHECK(contains(messages, "42"));
    robota_string_free(messages);
    robota_session_free(s);
  }
  /* Asked once, with a PKCE authorization URL; the second session used the stored tokens. */
  CHECK(atomic_load(&b.calls) == 1);
  CHECK(atomic_load(&b.bad_request) == 0);
  CHECK(contains(b.url, "code_challenge="));
  CHECK(wait_for(&b.finalized, 2, 5000) && atomic_load(&b.finalized) == 2);

  /* Bad input. */
  robota_session_options *o = make_options("{}");
  robota_error *err = NULL;
  CHECK(robota_session_options_set_mcp_authorization_handler(o, NULL, NULL, NULL, &err) ==
        ROBOTA_STATUS_NULL_ARGUMENT);
  robota_error_free(err);
  err = NULL;
  CHECK(robota_session_options_set_mcp_authorization_handler(NULL, on_authorization, &b, NULL,
                                                             &err) == ROBOTA_STATUS_NULL_ARGUMENT);
  robota_error_free(err);
  robota_session_options_free(o);
}

int main(void) {
  const char *mock_url = getenv("ROBOTA_MOCK_URL");
  const char *server_url = getenv("ROBOTA_OAUTH_MCP_URL");
  const char *home = getenv("ROBOTA_TEST_HOME");
  if (mock_url == NULL || server_url == NULL || home == NULL) {
    fprintf(stderr, "test_mcp_oauth: ROBOTA_MOCK_URL, ROBOTA_OAUTH_MCP_URL and ROBOTA_TEST_HOME "
                    "must be set\n");
    return 2;
  }
  robota_runtime *rt = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_runtime_new(2, &rt, &e_));
  if (rt == NULL) return 1;
  test_authorized_through_the_callback(rt, mock_url, server_url, home);
  robota_runtime_shutdown(rt, 5000);
  if (failures) {
    fprintf(stderr, "test_mcp_oauth: %d check(s) failed\n", failures);
    return 1;
  }
  printf("test_mcp_oauth: all checks passed\n");
  return 0;
}
