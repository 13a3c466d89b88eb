/* test_mcp_server.c: an in-process MCP server whose tools are C callbacks
 * (robota_mcp_server_new, robota_mcp_server_add_tool, robota_session_options_add_mcp_server):
 * a model behind mock-llm (ROBOTA_MOCK_URL) calls mcp__calc__add and mcp__calc__divide; the
 * callbacks' answers (a result and a rejection) reach the model, the server is listed with its
 * tools, a name shared with a configured server is refused, and bad input is a typed error.
 * Built with -std=c11 -Wall -Wextra -Werror -pedantic -pthread and run by ffi/tests/c_abi.rs.
 * Exits 0 when every check passes. */
#include "common.h"

static const char *SERVER_SPEC = "{\"name\": \"calc\", \"version\": \"2.0.0\"}";

static const char *ADD_SPEC =
    "{\"name\": \"add\", \"description\": \"Adds two numbers\", \"input_schema\": "
    "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"number\"}, \"b\": {\"type\": "
    "\"number\"}}, \"required\": [\"a\", \"b\"]}, \"annotations\": {\"readOnlyHint\": true}}";

static const char *DIVIDE_SPEC = "{\"name\": \"divide\", \"description\": \"Divides\"}";

typedef struct {
  atomic_int calls;
  atomic_int finalized;
  atomic_int bad_request;
  const char *expect; /* the request must contain this */
  const char *answer; /* resolve with this JSON */
  int reject;         /* reject with `answer` instead */
} tool_host;

static void tool_init(tool_host *t, const char *expect, const char *answer, int reject) {
  atomic_init(&t->calls, 0);
  atomic_init(&t->finalized, 0);
  atomic_init(&t->bad_request, 0);
  t->expect = expect;
  t->answer = answer;
  t->reject = reject;
}

static void tool_free(void *user_data) { atomic_fetch_add(&((tool_host *)user_data)->finalized, 1); }

static void on_tool(void *user_data, const char *request, size_t len, robota_completion *c) {
  tool_host *t = (tool_host *)user_data;
  atomic_fetch_add(&t->calls, 1);
  if (request == NULL || strlen(request) != len || !contains(request, t->expect) ||
      !contains(request, "\"server\":\"calc\"")) {
    fprintf(stderr, "unexpected request: %s\n", request == NULL ? "(null)" : request);
    atomic_fetch_add(&t->bad_request, 1);
  }
  if (t->reject) {
    CHECK(robota_completion_reject(c, t->answer, strlen(t->answer), NULL) == ROBOTA_STATUS_OK);
  } else {
    resolve_str(c, t->answer);
  }
}

static robota_mcp_server *calc_server(tool_host *add, tool_host *divide) {
  robota_mcp_server *server = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_mcp_server_new(SERVER_SPEC, strlen(SERVER_SPEC), &server, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_mcp_server_add_tool(server, ADD_SPEC, strlen(ADD_SPEC),
                                                             on_tool, add, tool_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_mcp_server_add_tool(server, DIVIDE_SPEC, strlen(DIVIDE_SPEC), on_tool,
                                           divide, tool_free, &e_));
  return server;
}

static void test_calls_reach_the_model(robota_runtime *rt, const char *url) {
  char config[512];
  snprintf(config, sizeof config,
           "{\"type\":\"anthropic\",\"model\":\"mock-model\",\"api_key\":\"test-key\","
           "\"base_url\":\"%s\",\"max_retries\":0}",
           url);
  tool_host add, divide;
  tool_init(&add, "\"a\":40", "{\"content\":[{\"type\":\"text\",\"text\":\"sum = 42\"}]}", 0);
  tool_init(&divide, "\"b\":0", "division by zero", 1);
  robota_mcp_server *server = calc_server(&add, &divide);
  const char *options_json =
      "{\"system_prompt\": \"test\", \"load_project_context\": false, \"builtin_tools\": false,"
      " \"settings\": {\"permissions\": {\"allow\": [\"mcp__calc\"]}}}";
  robota_session_options *o = make_options(options_json);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_add_mcp_server(o, server, &e_));
  robota_mcp_server_free(server);
  robota_provider *p = make_provider(rt, config);
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);

  char *servers = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_for_mcp_servers(s, 20000, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_mcp_servers(s, &servers, &e_));
  CHECK(contains(servers, "\"transport\":\"sdk\""));
  CHECK(contains(servers, "\"state\":\"connected\""));
  CHECK(contains(servers, "mcp__calc__add"));
  CHECK(contains(servers, "mcp__calc__divide"));
  robota_string_free(servers);

  const char *prompt = "compute";
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, prompt, strlen(prompt), &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 20000, &e_));
  CHECK(atomic_load(&add.calls) == 1);
  CHECK(atomic_load(&divide.calls) == 1);
  CHECK(atomic_load(&add.bad_request) == 0);
  CHECK(atomic_load(&divide.bad_request) == 0);
  char *messages = messages_of(s);
  CHECK(contains(messages, "sum = 42"));
  CHECK(contains(messages, "division by zero"));
  CHECK(contains(messages, "Computed over MCP."));
  robota_string_free(messages);
  robota_session_free(s);
  CHECK(wait_for(&add.finalized, 1, 5000) && atomic_load(&add.finalized) == 1);
  CHECK(wait_for(&divide.finalized, 1, 5000) && atomic_load(&divide.finalized) == 1);
}

static void test_name_clash_and_bad_input(robota_runtime *rt) {
  tool_host add, divide;
  tool_init(&add, "", "\"x\"", 0);
  tool_init(&divide, "", "\"x\"", 0);
  robota_mcp_server *server = calc_server(&add, &divide);
  const char *options_json =
      "{\"system_prompt\": \"test\", \"load_project_context\": false, \"builtin_tools\": false,"
      " \"mcp_servers\": {\"calc\": {\"command\": \"true\"}}}";
  robota_session_options *o = make_options(options_json);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_add_mcp_server(o, server, &e_));
  robota_provider *p = make_provider(rt, "{\"type\":\"scripted\",\"turns\":[{\"text\":\"x\"}]}");
  robota_session *s = NULL;
  robota_error *err = NULL;
  CHECK(robota_session_new(p, o, &s, &err) == ROBOTA_STATUS_INVALID_ARGUMENT);
  CHECK(s == NULL);
  CHECK(contains(robota_error_message(err), "calc"));
  robota_error_free(err);
  robota_session_options_free(o);
  robota_provider_free(p);

  /* A duplicate tool name, a bad schema, a NULL callback and a bad server name. */
  err = NULL;
  CHECK(robota_mcp_server_add_tool(server, ADD_SPEC, strlen(ADD_SPEC), on_tool, &add, NULL,
                                   &err) == ROBOTA_STATUS_INVALID_ARGUMENT);
  robota_error_free(err);
  const char *bad_schema = "{\"name\": \"x\", \"input_schema\": {\"type\": \"string\"}}";
  err = NULL;
  CHECK(robota_mcp_server_add_tool(server, bad_schema, strlen(bad_schema), on_tool, &add, NULL,
                                   &err) == ROBOTA_STATUS_INVALID_ARGUMENT);
  robota_error_free(err);
  err = NULL;
  CHECK(robota_mcp_server_add_tool(server, DIVIDE_SPEC, strlen(DIVIDE_SPEC), NULL, NULL, NULL,
                                   &err) == ROBOTA_STATUS_NULL_ARGUMENT);
  robota_error_free(err);
  robota_mcp_server_free(server);
  const char *bad_name = "{\"name\": \"a__b\"}";
  robota_mcp_server *bad = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_mcp_server_new(bad_name, strlen(bad_name), &bad, &e_));
  o = make_options("{}");
  err = NULL;
  CHECK(robota_session_options_add_mcp_server(o, bad, &err) == ROBOTA_STATUS_INVALID_ARGUMENT);
  CHECK(contains(robota_error_message(err), "a__b"));
  robota_error_free(err);
  robota_session_options_free(o);
  robota_mcp_server_free(bad);
  err = NULL;
  CHECK(robota_mcp_server_new("{}", 2, &bad, &err) == ROBOTA_STATUS_INVALID_JSON);
  robota_error_free(err);
}

int main(void) {
  const char *url = getenv("ROBOTA_MOCK_URL");
  if (url == NULL) {
    fprintf(stderr, "test_mcp_server: ROBOTA_MOCK_URL is not set\n");
    return 2;
  }
  robota_runtime *rt = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_runtime_new(2, &rt, &e_));
  if (rt == NULL) return 1;
  test_calls_reach_the_model(rt, url);
  test_name_clash_and_bad_input(rt);
  robota_runtime_shutdown(rt, 5000);
  if (failures) {
    fprintf(stderr, "test_mcp_server: %d check(s) failed\n", failures);
    return 1;
  }
  printf("test_mcp_server: all checks passed\n");
  return 0;
}
