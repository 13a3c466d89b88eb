/* test_host.c: host extensions through completion objects (permission handler, host tools,
 * commands, hooks, host providers), the session functions around them, queries, abort and
 * free with work in flight, fork detection, an HTTP turn against mock-llm
 * (ROBOTA_MOCK_URL) and invalid inputs. Built with -std=c11 -Wall -Wextra -Werror -pedantic
 * -pthread and run by ffi/tests/c_abi.rs. Exits 0 when every check passes. */
#include "common.h"

#include <pthread.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *BASE_OPTIONS =
    "{\"system_prompt\": \"test\", \"load_project_context\": false, \"builtin_tools\": false}";

static const char *LOOKUP_SPEC =
    "{\"name\": \"lookup\", \"description\": \"Looks up the weather.\", \"input_schema\": "
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}";

static const char *LOOKUP_RO_SPEC =
    "{\"name\": \"lookup\", \"description\": \"Looks up the weather.\", \"read_only\": true}";

/* ---- shared host state ---- */
typedef struct {
  atomic_int calls;
  atomic_int finalized;
  atomic_int bad_request;
  const char *answer;   /* resolve with this JSON (NULL: keep the completion) */
  const char *expect;   /* the request must contain this */
  long delay_ms;        /* resolve from another thread after this long */
  int reject;           /* reject instead of resolving */
  robota_session *abort_session; /* abort this session from inside the callback */
  _Atomic(robota_completion *) kept;
} host;

static void host_init(host *h, const char *answer) {
  atomic_init(&h->calls, 0);
  atomic_init(&h->finalized, 0);
  atomic_init(&h->bad_request, 0);
  h->answer = answer;
  h->expect = NULL;
  h->delay_ms = 0;
  h->reject = 0;
  h->abort_session = NULL;
  atomic_init(&h->kept, NULL);
}

static void host_free(void *user_data) {
  host *h = (host *)user_data;
  atomic_fetch_add(&h->finalized, 1);
}

typedef struct {
  robota_completion *completion;
  const char *answer;
  long delay_ms;
} later;

static void *resolve_later(void *arg) {
  later *l = (later *)arg;
  sleep_ms(l->delay_ms);
  resolve_str(l->completion, l->answer);
  free(l);
  return NULL;
}

/* The one host callback every extension uses in these tests. */
static void on_host_call(void *user_data, const char *request, size_t len,
                         robota_completion *c) {
  host *h = (host *)user_data;
  atomic_fetch_add(&h->calls, 1);
  if (request == NULL || strlen(request) != len || request[0] != '{' ||
      robota_completion_id(c) == 0 || robota_completion_is_cancelled(c) != 0)
    atomic_fetch_add(&h->bad_request, 1);
  if (h->expect != NULL && !contains(request, h->expect)) {
    fprintf(stderr, "request without %s: %s\n", h->expect, request);
    atomic_fetch_add(&h->bad_request, 1);
  }
  if (h->abort_session != NULL) {
    /* Abort from inside a callback: allowed; the completion is then cancelled. */
    CHECK(robota_session_abort(h->abort_session, NULL) == ROBOTA_STATUS_OK);
  }
  if (h->answer == NULL) {
    atomic_store(&h->kept, c);
    return;
  }
  if (h->reject) {
    CHECK(robota_completion_reject(c, h->answer, strlen(h->answer), NULL) == ROBOTA_STATUS_OK);
    return;
  }
  if (h->delay_ms > 0) {
    later *l = malloc(sizeof *l);
    l->completion = c;
    l->answer = h->answer;
    l->delay_ms = h->delay_ms;
    pthread_t thread;
    if (pthread_create(&thread, NULL, resolve_later, l) != 0) {
      failures++;
      free(l);
      resolve_str(c, h->answer);
      return;
    }
    pthread_detach(thread);
    return;
  }
  resolve_str(c, h->answer);
}

/* ---- events ---- */
typedef struct {
  atomic_int interrupted;
  atomic_int completes;
  atomic_int errors;
  atomic_int permission_requests;
  atomic_int model_unavailable; /* events mentioning the host provider's rejection */
} counts;

static void on_event(void *user_data, const robota_event *ev) {
  counts *c = (counts *)user_data;
  if (strcmp(ev->kind, "interrupted") == 0) atomic_fetch_add(&c->interrupted, 1);
  if (strcmp(ev->kind, "complete") == 0) atomic_fetch_add(&c->completes, 1);
  if (strcmp(ev->kind, "error") == 0) atomic_fetch_add(&c->errors, 1);
  if (strcmp(ev->kind, "permission_request") == 0)
    atomic_fetch_add(&c->permission_requests, 1);
  if (contains(ev->json, "model unavailable")) atomic_fetch_add(&c->model_unavailable, 1);
}

static void counts_init(counts *c) {
  atomic_init(&c->interrupted, 0);
  atomic_init(&c->completes, 0);
  atomic_init(&c->errors, 0);
  atomic_init(&c->permission_requests, 0);
  atomic_init(&c->model_unavailable, 0);
}

static void run_prompt(robota_session *s, const char *prompt) {
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, prompt, strlen(prompt), &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 20000, &e_));
}

static const char *TOOL_THEN_TEXT =
    "{\"type\":\"scripted\",\"turns\":["
    "{\"tool_calls\":[{\"id\":\"t1\",\"name\":\"lookup\",\"input\":{\"city\":\"Paris\"}}]},"
    "{\"text\":\"It is sunny.\"}]}";

/* Permission allow_once + a host tool answered from another thread. */
static void test_tool_allowed(robota_runtime *rt) {
  host perm, tool;
  host_init(&perm, "{\"type\":\"allow_once\"}");
  perm.expect = "\"tool_name\":\"lookup\"";
  host_init(&tool, "{\"content\":\"sunny, 21C\"}");
  tool.expect = "\"city\":\"Paris\"";
  tool.delay_ms = 30;

  robota_provider *p = make_provider(rt, TOOL_THEN_TEXT);
  robota_session_options *o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_set_permission_handler(
                                      o, on_host_call, &perm, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_add_tool(o, LOOKUP_SPEC,
                                                                  strlen(LOOKUP_SPEC),
                                                                  on_host_call, &tool,
                                                                  host_free, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  counts c;
  counts_init(&c);
  uint64_t sub = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe(s, on_event, &c, NULL, &sub, &e_));
  run_prompt(s, "weather?");
  CHECK(atomic_load(&perm.calls) == 1);
  CHECK(atomic_load(&tool.calls) == 1);
  CHECK(atomic_load(&perm.bad_request) == 0);
  CHECK(atomic_load(&tool.bad_request) == 0);
  CHECK(atomic_load(&c.permission_requests) == 1);
  CHECK(atomic_load(&c.completes) == 1);
  char *messages = messages_of(s);
  CHECK(contains(messages, "sunny, 21C"));
  CHECK(contains(messages, "It is sunny."));
  robota_string_free(messages);

  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_full_history(s, &json, &e_));
  CHECK(contains(json, "\"category\""));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_context_state(s, &json, &e_));
  CHECK(json != NULL && json[0] == '{');
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_id(s, &json, &e_));
  CHECK(json != NULL && strlen(json) > 0);
  robota_string_free(json);

  robota_session_free(s);
  CHECK(wait_for(&perm.finalized, 1, 5000) && atomic_load(&perm.finalized) == 1);
  CHECK(wait_for(&tool.finalized, 1, 5000) && atomic_load(&tool.finalized) == 1);
}

/* Deny with a message: the tool never runs; the model sees the message. */
static void test_permission_denied(robota_runtime *rt) {
  host perm, tool;
  host_init(&perm, "{\"type\":\"deny\",\"message\":\"not today\"}");
  host_init(&tool, "{\"content\":\"never\"}");
  robota_provider *p = make_provider(rt, TOOL_THEN_TEXT);
  robota_session_options *o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_set_permission_handler(
                                      o, on_host_call, &perm, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_SPEC, strlen(LOOKUP_SPEC),
                                                on_host_call, &tool, host_free, &e_));
  robota_session *s = make_session(p, o);
  robota_provider_free(p);
  run_prompt(s, "weather?");
  CHECK(atomic_load(&perm.calls) == 1);
  CHECK(atomic_load(&tool.calls) == 0);
  char *messages = messages_of(s);
  CHECK(contains(messages, "not today"));
  robota_string_free(messages);
  robota_session_free(s);
  /* The options still hold the callbacks. */
  CHECK(atomic_load(&perm.finalized) == 0);
  robota_session_options_free(o);
  CHECK(wait_for(&perm.finalized, 1, 5000) && atomic_load(&perm.finalized) == 1);
  CHECK(wait_for(&tool.finalized, 1, 5000) && atomic_load(&tool.finalized) == 1);

  /* A rejection denies too. */
  host_init(&perm, "the user is away");
  perm.reject = 1;
  host_init(&tool, "{\"content\":\"never\"}");
  p = make_provider(rt, TOOL_THEN_TEXT);
  o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_set_permission_handler(
                                      o, on_host_call, &perm, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_SPEC, strlen(LOOKUP_SPEC),
                                                on_host_call, &tool, NULL, &e_));
  s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  run_prompt(s, "weather?");
  CHECK(atomic_load(&tool.calls) == 0);
  messages = messages_of(s);
  CHECK(contains(messages, "the user is away"));
  robota_string_free(messages);
  robota_session_free(s);
}

/* allow_session: the second call of the tool is not asked about. */
static void test_allow_session(robota_runtime *rt) {
  host perm, tool;
  host_init(&perm, "{\"type\":\"allow_session\",\"rules\":[\"lookup\"]}");
  host_init(&tool, "\"cloudy\"");
  robota_provider *p = make_provider(
      rt,
      "{\"type\":\"scripted\",\"turns\":["
      "{\"tool_calls\":[{\"id\":\"t1\",\"name\":\"lookup\",\"input\":{\"city\":\"Rome\"}}]},"
      "{\"tool_calls\":[{\"id\":\"t2\",\"name\":\"lookup\",\"input\":{\"city\":\"Oslo\"}}]},"
      "{\"text\":\"Both looked up.\"}]}");
  robota_session_options *o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_set_permission_handler(
                                      o, on_host_call, &perm, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_SPEC, strlen(LOOKUP_SPEC),
                                                on_host_call, &tool, host_free, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  run_prompt(s, "two cities");
  CHECK(atomic_load(&perm.calls) == 1);
  CHECK(atomic_load(&tool.calls) == 2);
  char *messages = messages_of(s);
  CHECK(contains(messages, "Both looked up."));
  robota_string_free(messages);
  robota_session_free(s);
  /* Finalizers run once the engine dropped the session (possibly just after free returns). */
  CHECK(wait_for(&perm.finalized, 1, 5000) && atomic_load(&perm.finalized) == 1);
  CHECK(wait_for(&tool.finalized, 1, 5000) && atomic_load(&tool.finalized) == 1);
}

/* allow_always: the rule is saved to the chosen settings file. */
static void test_allow_always(robota_runtime *rt) {
  mkdir("allow-always-test", 0700);
  remove("allow-always-test/.claude/settings.local.json");
  host perm, tool;
  host_init(&perm, "{\"type\":\"allow_always\",\"destination\":\"localSettings\"}");
  host_init(&tool, "\"ok\"");
  robota_provider *p = make_provider(rt, TOOL_THEN_TEXT);
  robota_session_options *o = make_options(
      "{\"system_prompt\": \"t\", \"load_project_context\": false, \"builtin_tools\": false,"
      " \"cwd\": \"allow-always-test\"}");
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_set_permission_handler(
                                      o, on_host_call, &perm, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_SPEC, strlen(LOOKUP_SPEC),
                                                on_host_call, &tool, host_free, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  run_prompt(s, "weather?");
  CHECK(atomic_load(&perm.calls) == 1);
  CHECK(atomic_load(&tool.calls) == 1);
  robota_session_free(s);
  FILE *f = fopen("allow-always-test/.claude/settings.local.json", "r");
  CHECK(f != NULL);
  if (f != NULL) {
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    CHECK(contains(text, "\"lookup\""));
  }
  CHECK(wait_for(&perm.finalized, 1, 5000) && atomic_load(&perm.finalized) == 1);
  CHECK(wait_for(&tool.finalized, 1, 5000) && atomic_load(&tool.finalized) == 1);
}

/* ---- plugins ---- */
static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f != NULL) {
    fputs(text, f);
    fclose(f);
  }
}

static robota_session *plugin_session(robota_runtime *rt, const char *dir) {
  char options[1024];
  snprintf(options, sizeof options,
           "{\"system_prompt\": \"t\", \"load_project_context\": false, \"builtin_tools\": false, "
           "\"cwd\": \"%s/project\", \"home\": \"%s/home\"}",
           dir, dir);
  robota_provider *p = make_provider(rt, "{\"type\":\"scripted\",\"turns\":[]}");
  robota_session_options *o = make_options(options);
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  return s;
}

/* A plugin from a local marketplace folder: added and installed through the `plugin` command,
 * then listed with its state and its skill (named plugin:skill) by a new session. */
static void test_plugins(robota_runtime *rt) {
  char dir[] = "/tmp/robota-c-plugins-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[512];
  const char *folders[] = {"project", "home", "market", "market/.claude-plugin", "market/hello",
                           "market/hello/skills", "market/hello/skills/hi"};
  for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, folders[i]);
    CHECK(mkdir(path, 0700) == 0);
  }
  snprintf(path, sizeof path, "%s/market/.claude-plugin/marketplace.json", dir);
  write_text(path, "{\"name\": \"local\", \"plugins\": [{\"name\": \"hello\", \"source\": \"./hello\"}]}");
  snprintf(path, sizeof path, "%s/market/hello/skills/hi/SKILL.md", dir);
  write_text(path, "---\ndescription: Say hi\n---\nHI\n");

  robota_session *s = plugin_session(rt, dir);
  char args[600];
  char *json = NULL;
  snprintf(args, sizeof args, "marketplace add %s/market", dir);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_execute_command_blocking(
                                      s, "plugin", 6, args, strlen(args), 30000, &json, &e_));
  CHECK(contains(json, "\"success\":true"));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_execute_command_blocking(
                                      s, "plugin", 6, "install hello@local", 19, 30000, &json, &e_));
  CHECK(contains(json, "\"success\":true"));
  robota_string_free(json);
  json = NULL;
  robota_session_free(s);

  s = plugin_session(rt, dir);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_plugins(s, &json, &e_));
  CHECK(contains(json, "\"id\":\"hello@local\""));
  CHECK(contains(json, "\"enabled\":true"));
  CHECK(contains(json, "\"loaded\":true"));
  CHECK(contains(json, "\"hello:hi\""));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_skills(s, &json, &e_));
  CHECK(contains(json, "\"name\":\"hello:hi\""));
  CHECK(contains(json, "\"kind\":\"plugin\""));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_list_plugins(NULL, &json, &e_));
  CHECK(json == NULL);
  robota_session_free(s);
}

/* ---- commands ---- */
static robota_session *greet_session = NULL;

static void on_greet(void *user_data, const char *request, size_t len, robota_completion *c) {
  host *h = (host *)user_data;
  (void)len;
  atomic_fetch_add(&h->calls, 1);
  if (greet_session != NULL) {
    /* Blocking calls are refused on engine threads (inside callbacks). */
    char *json = NULL;
    CHECK(robota_session_execute_command_blocking(greet_session, "help", 4, NULL, 0, 1000, &json,
                                                  NULL) == ROBOTA_STATUS_INVALID_STATE);
    CHECK(json == NULL);
    CHECK(robota_session_shutdown(greet_session, 10, NULL) == ROBOTA_STATUS_INVALID_STATE);
    /* Non-blocking ones work. */
    CHECK(robota_session_list_commands(greet_session, &json, NULL) == ROBOTA_STATUS_OK);
    robota_string_free(json);
  }
  if (contains(request, "\"args\":\"fail\"")) {
    CHECK(robota_completion_reject(c, "greeting failed", 15, NULL) == ROBOTA_STATUS_OK);
  } else if (contains(request, "\"args\":\"world\"")) {
    resolve_str(c, "{\"message\":\"Hello, world!\",\"data\":{\"n\":1}}");
  } else {
    resolve_str(c, "\"Hello, whoever!\"");
  }
}

typedef struct {
  atomic_int done;
  atomic_int status;
  char json[16384];
} result_slot;

static void on_result(void *user_data, const robota_error *error, const char *json, size_t len) {
  result_slot *r = (result_slot *)user_data;
  if (error != NULL) {
    atomic_store(&r->status, robota_error_code(error));
    CHECK(json == NULL);
  } else {
    atomic_store(&r->status, ROBOTA_STATUS_OK);
    CHECK(json != NULL && strlen(json) == len);
    snprintf(r->json, sizeof r->json, "%s", json);
  }
  atomic_fetch_add(&r->done, 1);
}

static void result_init(result_slot *r) {
  atomic_init(&r->done, 0);
  atomic_init(&r->status, -1);
  r->json[0] = '\0';
}

/* Skills registered through the options: listed with their source; one with an unusable name is
 * skipped (a session warning), the session still starts. Activation is covered by the conformance
 * scenarios. */
static void test_skills(robota_runtime *rt) {
  const char *options =
      "{\"system_prompt\": \"test\", \"load_project_context\": false, \"builtin_tools\": false, "
      "\"skills\": [{\"name\": \"greet\", \"content\": \"---\\ndescription: Greets "
      "someone.\\ncontext: fork\\n---\\nGreet $0.\"}, {\"name\": \"bad name\", \"content\": "
      "\"---\\ndescription: x\\n---\\nx\"}]}";
  robota_provider *p = make_provider(rt, "{\"type\":\"scripted\",\"turns\":[]}");
  robota_session_options *o = make_options(options);
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_skills(s, &json, &e_));
  CHECK(contains(json, "\"name\":\"greet\""));
  CHECK(contains(json, "\"kind\":\"host\""));
  CHECK(contains(json, "\"context\":\"fork\""));
  CHECK(!contains(json, "bad name"));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_list_skills(NULL, &json, &e_));
  robota_session_free(s);
}

/* An MCP server given in the options' `mcp_servers` (the Python test server installed by
 * tests/mcp-servers/setup.sh, found through ROBOTA_MCP_SERVERS): listed as connected with its
 * tools, a missing one as failed; the model's call of its tool gets the server's answer. */
static void test_mcp_servers(robota_runtime *rt) {
  const char *dir = getenv("ROBOTA_MCP_SERVERS");
  CHECK(dir != NULL);
  if (dir == NULL) return;
  char options[4096];
  snprintf(options, sizeof options,
           "{\"system_prompt\": \"test\", \"load_project_context\": false, \"builtin_tools\": false, "
           "\"settings\": {\"permissions\": {\"allow\": [\"mcp__py\"]}}, "
           "\"mcp_servers\": {\"py\": {\"command\": \"%s/.venv/bin/python\", \"args\": "
           "[\"%s/python_server.py\"]}, \"gone\": {\"command\": \"/nonexistent/mcp-server\"}}}",
           dir, dir);
  robota_provider *p = make_provider(
      rt, "{\"type\":\"scripted\",\"turns\":["
          "{\"tool_calls\":[{\"id\":\"m1\",\"name\":\"mcp__py__add\",\"input\":{\"a\":40,\"b\":2}}]},"
          "{\"text\":\"Done.\"}]}");
  robota_session_options *o = make_options(options);
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  /* The servers connect in the background: a wait shorter than the Python server's start runs
   * out, a long one sees them done. */
  EXPECT_STATUS(ROBOTA_STATUS_TIMEOUT, robota_session_wait_for_mcp_servers(s, 1, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_for_mcp_servers(s, 30000, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_wait_for_mcp_servers(NULL, 1, &e_));
  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_mcp_servers(s, &json, &e_));
  CHECK(contains(json, "\"name\":\"py\""));
  CHECK(contains(json, "\"state\":\"connected\""));
  CHECK(contains(json, "\"mcp__py__add\""));
  CHECK(contains(json, "\"state\":\"failed\""));
  robota_string_free(json);
  json = NULL;
  run_prompt(s, "add");
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_messages(s, &json, &e_));
  CHECK(contains(json, "\"tool_result\""));
  CHECK(contains(json, "42"));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_list_mcp_servers(NULL, &json, &e_));
  robota_session_free(s);
}

/* Custom slash commands registered through the options: listed by robota_session_list_commands
 * with their source (`host`) and description; one with an unusable name is skipped (a session
 * warning), the session still starts. Running one with arguments is the conformance scenario
 * custom_command_with_arguments. */
static void test_custom_commands(robota_runtime *rt) {
  const char *options =
      "{\"system_prompt\": \"test\", \"load_project_context\": false, \"builtin_tools\": false, "
      "\"commands\": [{\"name\": \"review\", \"content\": \"---\\ndescription: Review a "
      "file.\\nargument-hint: FILE\\n---\\nReview $1.\"}, {\"name\": \"bad name\", \"content\": "
      "\"x\"}]}";
  robota_provider *p = make_provider(rt, "{\"type\":\"scripted\",\"turns\":[]}");
  robota_session_options *o = make_options(options);
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_commands(s, &json, &e_));
  CHECK(contains(json, "\"name\":\"review\""));
  CHECK(contains(json, "\"source\":{\"kind\":\"host\"}"));
  CHECK(contains(json, "Review a file. (host)"));
  CHECK(contains(json, "\"argument_hint\":\"FILE\""));
  CHECK(!contains(json, "bad name"));
  robota_string_free(json);
  robota_session_free(s);
}

static void test_commands(robota_runtime *rt) {
  host greet;
  host_init(&greet, NULL);
  const char *descriptor =
      "{\"name\":\"greet\",\"description\":\"Greets someone.\",\"argument_hint\":\"<name>\"}";
  robota_provider *p = make_provider(rt, "{\"type\":\"scripted\",\"turns\":[]}");
  robota_session_options *o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_command(o, descriptor, strlen(descriptor), on_greet,
                                                   &greet, host_free, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  greet_session = s;

  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_commands(s, &json, &e_));
  CHECK(contains(json, "\"name\":\"greet\""));
  CHECK(contains(json, "\"name\":\"rename\""));
  robota_string_free(json);
  json = NULL;

  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_execute_command_blocking(
                                      s, "/greet", 6, "world", 5, 10000, &json, &e_));
  CHECK(contains(json, "Hello, world!"));
  CHECK(contains(json, "\"success\":true"));
  CHECK(contains(json, "\"n\":1"));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_execute_command_blocking(
                                      s, "greet", 5, "fail", 4, 10000, &json, &e_));
  CHECK(contains(json, "greeting failed"));
  CHECK(contains(json, "\"success\":false"));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_COMMAND, robota_session_execute_command_blocking(
                                           s, "nope", 4, NULL, 0, 10000, &json, &e_));
  CHECK(json == NULL);

  /* Asynchronous, with a result callback. */
  result_slot r;
  result_init(&r);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_execute_command(s, "greet", 5, "", 0, on_result, &r, &e_));
  CHECK(wait_for(&r.done, 1, 10000));
  CHECK(atomic_load(&r.status) == ROBOTA_STATUS_OK);
  CHECK(contains(r.json, "Hello, whoever!"));
  result_init(&r);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_execute_command(s, "nope", 4, "", 0, on_result, &r, &e_));
  CHECK(wait_for(&r.done, 1, 10000));
  CHECK(atomic_load(&r.status) == ROBOTA_STATUS_COMMAND);

  /* Built-in rename, then get/set name. */
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_execute_command_blocking(
                                      s, "rename", 6, "Weather chat", 12, 10000, &json, &e_));
  CHECK(contains(json, "session_renamed"));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_name(s, &json, &e_));
  CHECK(json != NULL && strcmp(json, "Weather chat") == 0);
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_set_name(s, "Other", 5, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_name(s, &json, &e_));
  CHECK(json != NULL && strcmp(json, "Other") == 0);
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_set_name(s, NULL, 0, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_name(s, &json, &e_));
  CHECK(json == NULL);

  CHECK(atomic_load(&greet.calls) == 3);
  greet_session = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_shutdown(s, 10000, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_STATE, robota_session_submit(s, "late", 4, &e_));
  robota_session_free(s);
  CHECK(wait_for(&greet.finalized, 1, 5000) && atomic_load(&greet.finalized) == 1);
}

/* A PreToolUse hook callback blocks the tool. */
static void test_hook_blocks_tool(robota_runtime *rt) {
  host hook, tool;
  host_init(&hook, "{\"type\":\"block\",\"reason\":\"no lookups today\"}");
  hook.expect = "\"hook_event_name\":\"PreToolUse\"";
  host_init(&tool, "\"never\"");
  robota_provider *p = make_provider(rt, TOOL_THEN_TEXT);
  robota_session_options *o = make_options(BASE_OPTIONS);
  const char *spec = "{\"event\":\"PreToolUse\",\"matcher\":\"lookup\"}";
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_add_hook(o, spec, strlen(spec),
                                                                  on_host_call, &hook,
                                                                  host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_RO_SPEC, strlen(LOOKUP_RO_SPEC),
                                                on_host_call, &tool, host_free, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  run_prompt(s, "weather?");
  CHECK(atomic_load(&hook.calls) >= 1);
  CHECK(atomic_load(&hook.bad_request) == 0);
  CHECK(atomic_load(&tool.calls) == 0);
  char *messages = messages_of(s);
  CHECK(contains(messages, "no lookups today"));
  robota_string_free(messages);
  robota_session_free(s);
  CHECK(wait_for(&hook.finalized, 1, 5000) && atomic_load(&hook.finalized) == 1);
  CHECK(wait_for(&tool.finalized, 1, 5000) && atomic_load(&tool.finalized) == 1);
}

/* ---- a host provider ---- */
typedef struct {
  atomic_int calls;
  atomic_int finalized;
  atomic_int saw_tool_result;
} model;

static void emit(robota_completion *c, const char *json) {
  robota_error *err = NULL;
  robota_status s = robota_completion_emit(c, json, strlen(json), &err);
  if (s != ROBOTA_STATUS_OK) {
    fprintf(stderr, "emit(%s) failed (%d): %s\n", json, (int)s, robota_error_message(err));
    failures++;
  }
  robota_error_free(err);
}

static void *second_answer(void *arg) {
  robota_completion *c = (robota_completion *)arg;
  sleep_ms(20);
  emit(c, "{\"type\":\"text_delta\",\"text\":\"Done \"}");
  emit(c, "{\"type\":\"text_delta\",\"text\":\"via host.\"}");
  resolve_str(c, "{\"usage\":{\"input_tokens\":12,\"output_tokens\":3}}");
  return NULL;
}

static void on_model_call(void *user_data, const char *request, size_t len,
                          robota_completion *c) {
  model *m = (model *)user_data;
  (void)len;
  int n = atomic_fetch_add(&m->calls, 1);
  if (n == 0) {
    CHECK(contains(request, "\"name\":\"lookup\""));
    emit(c, "{\"type\":\"text_delta\",\"text\":\"Checking. \"}");
    emit(c, "{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"lookup\",\"input\":{\"city\":\"Oslo\"}}");
    /* Invalid events are refused without ending the call. */
    robota_error *err = NULL;
    CHECK(robota_completion_emit(c, "{\"type\":\"bogus\"}", 16, &err) ==
          ROBOTA_STATUS_INVALID_JSON);
    robota_error_free(err);
    resolve_str(c, "{\"usage\":{\"input_tokens\":10,\"output_tokens\":5}}");
  } else if (n == 1) {
    if (contains(request, "cold")) atomic_fetch_add(&m->saw_tool_result, 1);
    pthread_t thread;
    if (pthread_create(&thread, NULL, second_answer, c) != 0) {
      failures++;
      resolve_str(c, "null");
      return;
    }
    pthread_detach(thread);
  } else {
    CHECK(robota_completion_reject(c, "model unavailable", 17, NULL) == ROBOTA_STATUS_OK);
  }
}

static void model_free(void *user_data) {
  model *m = (model *)user_data;
  atomic_fetch_add(&m->finalized, 1);
}

static void test_host_provider(robota_runtime *rt) {
  model m;
  atomic_init(&m.calls, 0);
  atomic_init(&m.finalized, 0);
  atomic_init(&m.saw_tool_result, 0);
  host tool;
  host_init(&tool, "{\"content\":\"cold\"}");
  robota_provider *p = NULL;
  const char *info = "{\"name\":\"c-model\",\"model\":\"c-1\"}";
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_provider_new_host(rt, info, strlen(info),
                                                           on_model_call, &m, model_free, &p,
                                                           &e_));
  robota_session_options *o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_RO_SPEC, strlen(LOOKUP_RO_SPEC),
                                                on_host_call, &tool, NULL, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  counts c;
  counts_init(&c);
  uint64_t sub = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe(s, on_event, &c, NULL, &sub, &e_));
  run_prompt(s, "weather in Oslo?");
  CHECK(atomic_load(&m.calls) == 2);
  CHECK(atomic_load(&tool.calls) == 1);
  CHECK(atomic_load(&m.saw_tool_result) == 1);
  CHECK(atomic_load(&c.completes) == 1);
  char *messages = messages_of(s);
  CHECK(contains(messages, "Checking."));
  CHECK(contains(messages, "Done via host."));
  robota_string_free(messages);
  /* The third call is rejected: the prompt ends reporting the provider error. */
  run_prompt(s, "again");
  CHECK(atomic_load(&c.model_unavailable) >= 1);
  robota_session_free(s);
  CHECK(atomic_load(&m.finalized) == 0); /* the provider handle is still alive */
  robota_provider_free(p);
  CHECK(wait_for(&m.finalized, 1, 5000) && atomic_load(&m.finalized) == 1);
}

/* Abort from inside a tool callback: the kept completion is cancelled, the model sees
 * "aborted", a late answer is ignored. */
static void test_abort_from_callback(robota_runtime *rt) {
  host tool;
  host_init(&tool, NULL);
  robota_provider *p = make_provider(rt, TOOL_THEN_TEXT);
  robota_session_options *o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_RO_SPEC, strlen(LOOKUP_RO_SPEC),
                                                on_host_call, &tool, host_free, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  tool.abort_session = s;
  counts c;
  counts_init(&c);
  uint64_t sub = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe(s, on_event, &c, NULL, &sub, &e_));
  run_prompt(s, "weather?");
  CHECK(atomic_load(&tool.calls) == 1);
  CHECK(atomic_load(&c.interrupted) == 1);
  CHECK(atomic_load(&c.completes) == 0);
  robota_completion *kept = atomic_load(&tool.kept);
  CHECK(kept != NULL);
  if (kept != NULL) {
    CHECK(robota_completion_is_cancelled(kept) == 1);
    EXPECT_STATUS(ROBOTA_STATUS_CANCELLED,
                  robota_completion_resolve(kept, "\"late\"", 6, &e_));
  }
  char *messages = messages_of(s);
  CHECK(contains(messages, "aborted"));
  CHECK(!contains(messages, "late"));
  robota_string_free(messages);
  robota_session_free(s);
  CHECK(wait_for(&tool.finalized, 1, 5000) && atomic_load(&tool.finalized) == 1);
}

/* Free with work in flight: unresolved completions are cancelled, no callback runs after
 * the finalizer. */
static void test_free_in_flight(robota_runtime *rt) {
  host perm, tool;
  host_init(&perm, NULL); /* keeps the permission completion */
  host_init(&tool, NULL);
  robota_provider *p = make_provider(rt, TOOL_THEN_TEXT);
  robota_session_options *o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_set_permission_handler(
                                      o, on_host_call, &perm, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_SPEC, strlen(LOOKUP_SPEC),
                                                on_host_call, &tool, host_free, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "weather?", 8, &e_));
  CHECK(wait_for(&perm.calls, 1, 10000));
  robota_completion *kept = atomic_load(&perm.kept);
  CHECK(kept != NULL);
  CHECK(kept == NULL || robota_completion_is_cancelled(kept) == 0);
  robota_session_free(s);
  CHECK(kept == NULL || robota_completion_is_cancelled(kept) == 1);
  CHECK(wait_for(&perm.finalized, 1, 5000) && atomic_load(&perm.finalized) == 1);
  CHECK(wait_for(&tool.finalized, 1, 5000) && atomic_load(&tool.finalized) == 1);
  if (kept != NULL)
    EXPECT_STATUS(ROBOTA_STATUS_CANCELLED,
                  robota_completion_resolve(kept, "{\"type\":\"allow_once\"}", 21, &e_));
  int calls = atomic_load(&tool.calls);
  sleep_ms(100);
  CHECK(atomic_load(&tool.calls) == calls);
  CHECK(calls == 0);

  /* A tool completion left unresolved at free. */
  host_init(&tool, NULL);
  p = make_provider(rt, TOOL_THEN_TEXT);
  o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_RO_SPEC, strlen(LOOKUP_RO_SPEC),
                                                on_host_call, &tool, host_free, &e_));
  s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "weather?", 8, &e_));
  CHECK(wait_for(&tool.calls, 1, 10000));
  robota_session_free(s);
  kept = atomic_load(&tool.kept);
  CHECK(kept != NULL);
  if (kept != NULL) {
    CHECK(robota_completion_is_cancelled(kept) == 1);
    EXPECT_STATUS(ROBOTA_STATUS_CANCELLED,
                  robota_completion_reject(kept, "too late", 8, &e_));
  }
  CHECK(wait_for(&tool.finalized, 1, 5000) && atomic_load(&tool.finalized) == 1);
}

/* Malformed answers: the call fails cleanly for the engine and the host gets the error. */
static atomic_int bad_answer_status;

static void on_bad_answer(void *user_data, const char *request, size_t len,
                          robota_completion *c) {
  (void)user_data;
  (void)request;
  (void)len;
  robota_error *err = NULL;
  atomic_store(&bad_answer_status, robota_completion_resolve(c, "{", 1, &err));
  robota_error_free(err);
}

static void on_bad_reject(void *user_data, const char *request, size_t len,
                          robota_completion *c) {
  (void)user_data;
  (void)request;
  (void)len;
  const char bad[] = {'n', (char)0xff};
  CHECK(robota_completion_emit(c, "{}", 2, NULL) == ROBOTA_STATUS_INVALID_STATE);
  CHECK(robota_completion_reject(c, bad, 2, NULL) == ROBOTA_STATUS_INVALID_UTF8);
}

static void test_malformed_answers(robota_runtime *rt) {
  atomic_init(&bad_answer_status, -1);
  robota_provider *p = make_provider(rt, TOOL_THEN_TEXT);
  robota_session_options *o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_RO_SPEC, strlen(LOOKUP_RO_SPEC),
                                                on_bad_answer, NULL, NULL, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  run_prompt(s, "weather?");
  CHECK(atomic_load(&bad_answer_status) == ROBOTA_STATUS_INVALID_JSON);
  char *messages = messages_of(s);
  CHECK(contains(messages, "invalid JSON"));
  CHECK(contains(messages, "It is sunny."));
  robota_string_free(messages);
  robota_session_free(s);

  /* A rejection with an invalid message still denies. */
  p = make_provider(rt, TOOL_THEN_TEXT);
  o = make_options(BASE_OPTIONS);
  host tool;
  host_init(&tool, "\"never\"");
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_set_permission_handler(
                                      o, on_bad_reject, NULL, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_SPEC, strlen(LOOKUP_SPEC),
                                                on_host_call, &tool, NULL, &e_));
  s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  run_prompt(s, "weather?");
  CHECK(atomic_load(&tool.calls) == 0);
  messages = messages_of(s);
  CHECK(contains(messages, "rejected"));
  robota_string_free(messages);
  robota_session_free(s);
}

/* cancel_queue drops the waiting prompt and returns it. */
static void test_cancel_queue(robota_runtime *rt) {
  robota_provider *p = make_provider(
      rt,
      "{\"type\":\"scripted\",\"turns\":[{\"text\":[\"a\",\"b\",\"c\",\"d\"],"
      "\"delay_ms_per_chunk\":30},{\"text\":\"never played\"}]}");
  robota_session_options *o = make_options(BASE_OPTIONS);
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "first", 5, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "second", 6, &e_));
  char *dropped = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_cancel_queue(s, &dropped, &e_));
  CHECK(dropped != NULL && strcmp(dropped, "second") == 0);
  robota_string_free(dropped);
  dropped = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_cancel_queue(s, &dropped, &e_));
  CHECK(dropped == NULL);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 20000, &e_));
  char *messages = messages_of(s);
  CHECK(contains(messages, "abcd"));
  CHECK(!contains(messages, "never played"));
  CHECK(!contains(messages, "second"));
  robota_string_free(messages);
  robota_session_free(s);
}

/* ---- tracked submits: each prompt's own result ---- */
static void test_submit_tracked(robota_runtime *rt) {
  robota_provider *p = make_provider(
      rt,
      "{\"type\":\"scripted\",\"turns\":[{\"text\":[\"a\",\"b\",\"c\",\"d\"],"
      "\"delay_ms_per_chunk\":30},{\"text\":\"two\"},{\"text\":[\"x\",\"y\",\"z\",\"w\"],"
      "\"delay_ms_per_chunk\":300},{\"text\":[\"p\",\"q\",\"r\",\"s\"],"
      "\"delay_ms_per_chunk\":300}]}");
  robota_session_options *o = make_options(BASE_OPTIONS);
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  result_slot r1, r2, r3, r4, unused;
  result_init(&r1);
  result_init(&r2);
  result_init(&r3);
  result_init(&r4);
  result_init(&unused);
  int32_t queued = -1;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_submit_tracked(s, "first", 5, on_result, &r1, &queued, NULL, &e_));
  CHECK(queued == 0);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_submit_tracked(s, "second", 6, on_result, &r2, &queued, NULL, &e_));
  CHECK(queued == 1);
  EXPECT_STATUS(ROBOTA_STATUS_QUEUE_FULL,
                robota_session_submit_tracked(s, "third", 5, on_result, &unused, NULL, NULL, &e_));
  CHECK(wait_for(&r1.done, 1, 20000));
  CHECK(wait_for(&r2.done, 1, 20000));
  CHECK(atomic_load(&r1.status) == ROBOTA_STATUS_OK && atomic_load(&r2.status) == ROBOTA_STATUS_OK);
  CHECK(contains(r1.json, "\"status\":\"complete\"") && contains(r1.json, "abcd"));
  CHECK(contains(r2.json, "\"status\":\"complete\"") && contains(r2.json, "\"two\""));

  /* A queued prompt dropped by cancel_queue is cancelled; the running one, aborted, is
   * interrupted. */
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_submit_tracked(s, "third", 5, on_result, &r3, NULL, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_submit_tracked(s, "fourth", 6, on_result, &r4, NULL, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_cancel_queue(s, NULL, &e_));
  CHECK(wait_for(&r4.done, 1, 20000));
  CHECK(contains(r4.json, "\"status\":\"cancelled\""));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_abort(s, &e_));
  CHECK(wait_for(&r3.done, 1, 20000));
  CHECK(contains(r3.json, "\"status\":\"interrupted\""));
  CHECK(atomic_load(&unused.done) == 0);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 20000, &e_));

  /* cancel_prompt: exactly one prompt, by id. */
  result_slot r5, r6;
  result_init(&r5);
  result_init(&r6);
  uint64_t id5 = 0, id6 = 0;
  int32_t found = -1;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_submit_tracked(s, "fifth", 5, on_result, &r5, NULL, &id5, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_submit_tracked(s, "sixth", 5, on_result, &r6, NULL, &id6, &e_));
  CHECK(id5 != 0 && id6 != 0 && id5 != id6);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_cancel_prompt(s, id6, &found, &e_));
  CHECK(found == 1);
  CHECK(wait_for(&r6.done, 1, 20000));
  CHECK(contains(r6.json, "\"status\":\"cancelled\""));
  CHECK(atomic_load(&r5.done) == 0); /* the running one goes on */
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_cancel_prompt(s, id5, &found, &e_));
  CHECK(found == 1);
  CHECK(wait_for(&r5.done, 1, 20000));
  CHECK(contains(r5.json, "\"status\":\"interrupted\""));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_cancel_prompt(s, id5, &found, &e_));
  CHECK(found == 0);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_cancel_prompt(s, 999999, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_cancel_prompt(NULL, id5, &found, &e_));

  /* Invalid inputs: reported directly, the callback is never called. */
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_submit_tracked(NULL, "x", 1, on_result, &unused, NULL, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_submit_tracked(s, NULL, 1, on_result, &unused, NULL, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_submit_tracked(s, "x", 1, NULL, &unused, NULL, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8,
                robota_session_submit_tracked(s, "\xff", 1, on_result, &unused, NULL, NULL, &e_));
  CHECK(atomic_load(&unused.done) == 0);
  robota_session_free(s);
}

/* ---- submit_as_typed: hooks see what the user typed, the model the built prompt ---- */
static void test_submit_as_typed(robota_runtime *rt) {
  host hook;
  host_init(&hook, "{\"type\":\"continue\"}");
  hook.expect = "\"prompt\":\"/audit staged\"";
  robota_provider *p = make_provider(rt, "{\"type\":\"scripted\",\"turns\":[{\"text\":\"audited\"}]}");
  robota_session_options *o = make_options(BASE_OPTIONS);
  const char *spec = "{\"event\":\"UserPromptSubmit\"}";
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_add_hook(o, spec, strlen(spec),
                                                                  on_host_call, &hook,
                                                                  host_free, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  result_slot r, unused;
  result_init(&r);
  result_init(&unused);
  const char *built = "Review the staged changes for bugs.";
  const char *typed = "{\"display_input\":\"/audit\",\"raw_input\":\"/audit staged\"}";
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_submit_as_typed(s, built, strlen(built), typed, strlen(typed),
                                               on_result, &r, NULL, NULL, &e_));
  CHECK(wait_for(&r.done, 1, 20000));
  CHECK(contains(r.json, "\"status\":\"complete\"") && contains(r.json, "audited"));
  CHECK(atomic_load(&hook.calls) == 1);
  CHECK(atomic_load(&hook.bad_request) == 0);
  char *messages = messages_of(s);
  CHECK(contains(messages, "Review the staged changes"));
  robota_string_free(messages);
  /* Bad typed input is refused before anything runs; NULL means none. */
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_session_submit_as_typed(s, "x", 1, "{\"raw\":1}", 9, on_result, &unused,
                                               NULL, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_session_submit_as_typed(s, "x", 1, "{\"raw_input\":1}", 15, on_result,
                                               &unused, NULL, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_submit_as_typed(s, "x", 1, NULL, 0, NULL, &unused, NULL, NULL,
                                               &e_));
  CHECK(atomic_load(&unused.done) == 0);
  robota_session_free(s);
  CHECK(wait_for(&hook.finalized, 1, 5000) && atomic_load(&hook.finalized) == 1);
}

/* ---- outcomes: refused, truncated and a failed model call, each as its own status ---- */
static void test_outcomes(robota_runtime *rt) {
  robota_provider *p = make_provider(
      rt,
      "{\"type\":\"scripted\",\"turns\":[{\"text\":\"I can't help with that.\","
      "\"refusal\":{\"category\":\"cyber\",\"explanation\":\"Policy.\"}},"
      "{\"text\":\"Half an ans\",\"stop_reason\":\"max_tokens\"}]}");
  robota_session_options *o = make_options(BASE_OPTIONS);
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  result_slot refused, truncated;
  result_init(&refused);
  result_init(&truncated);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit_tracked(s, "harm", 4, on_result,
                                                                &refused, NULL, NULL, &e_));
  CHECK(wait_for(&refused.done, 1, 20000));
  CHECK(contains(refused.json, "\"status\":\"refused\""));
  CHECK(contains(refused.json, "\"stop_reason\":\"refused\""));
  CHECK(contains(refused.json, "\"category\":\"cyber\""));
  CHECK(contains(refused.json, "\"explanation\":\"Policy.\""));
  CHECK(!contains(refused.json, "Maximum rounds"));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit_tracked(s, "long", 4, on_result,
                                                                &truncated, NULL, NULL, &e_));
  CHECK(wait_for(&truncated.done, 1, 20000));
  CHECK(contains(truncated.json, "\"status\":\"truncated\""));
  CHECK(contains(truncated.json, "Half an ans"));
  robota_session_free(s);

  /* Nothing listens on port 1: the model call fails, and the prompt ends as an error with the
   * failure's kind and whether a retry may help — never as complete. */
  p = make_provider(rt,
                    "{\"type\":\"anthropic\",\"model\":\"m\",\"api_key\":\"k\","
                    "\"base_url\":\"http://127.0.0.1:1\",\"max_retries\":0}");
  o = make_options(BASE_OPTIONS);
  s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  counts c;
  counts_init(&c);
  uint64_t sub = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe(s, on_event, &c, NULL, &sub, &e_));
  result_slot failed;
  result_init(&failed);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_submit_tracked(s, "hi", 2, on_result, &failed, NULL, NULL, &e_));
  CHECK(wait_for(&failed.done, 1, 20000));
  CHECK(contains(failed.json, "\"status\":\"error\""));
  CHECK(contains(failed.json, "\"kind\":\"network\""));
  CHECK(contains(failed.json, "\"retryable\":true"));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 20000, &e_));
  CHECK(atomic_load(&c.completes) == 0);
  CHECK(atomic_load(&c.errors) == 1);
  robota_session_free(s);
}

/* ---- query ---- */
static void test_query(robota_runtime *rt) {
  robota_provider *p = make_provider(
      rt, "{\"type\":\"scripted\",\"turns\":[{\"text\":\"Query answer\"},{\"text\":\"Second\"}]}");
  robota_query *q = NULL;
  const char *options =
      "{\"system_prompt\":\"t\",\"load_project_context\":false,\"builtin_tools\":false,"
      "\"allowed_tools\":[\"Read\"]}";
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_query_new(p, options, strlen(options), &q, &e_));
  robota_provider_free(p);
  result_slot r;
  result_init(&r);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_query_run(q, "hi", 2, on_result, &r, &e_));
  CHECK(wait_for(&r.done, 1, 10000));
  CHECK(atomic_load(&r.status) == ROBOTA_STATUS_OK);
  CHECK(contains(r.json, "\"response\":\"Query answer\""));
  CHECK(contains(r.json, "\"num_turns\":1"));
  CHECK(contains(r.json, "\"session_id\""));
  CHECK(contains(r.json, "\"status\":\"complete\""));
  result_init(&r);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_query_run(q, "again", 5, on_result, &r, &e_));
  CHECK(wait_for(&r.done, 1, 10000));
  CHECK(contains(r.json, "\"response\":\"Second\""));
  /* Out of turns: a provider error. */
  result_init(&r);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_query_run(q, "more", 4, on_result, &r, &e_));
  CHECK(wait_for(&r.done, 1, 10000));
  CHECK(atomic_load(&r.status) == ROBOTA_STATUS_PROVIDER);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_query_abort(q, &e_));
  robota_query_free(q);

  /* Invalid inputs. */
  p = make_provider(rt, "{\"type\":\"scripted\",\"turns\":[]}");
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_query_new(NULL, "", 0, &q, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_query_new(p, "", 0, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON, robota_query_new(p, "{", 1, &q, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_query_new(p, "{\"allowed_tools\":5}", 19, &q, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON, robota_query_new(p, "{\"bogus\":1}", 11, &q, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8, robota_query_new(p, "\xff", 1, &q, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_query_new(p, "", 0, &q, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_query_run(NULL, "x", 1, on_result, &r, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_query_run(q, NULL, 1, on_result, &r, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_query_run(q, "x", 1, NULL, &r, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8, robota_query_run(q, "\xff", 1, on_result, &r, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_query_abort(NULL, &e_));
  robota_query_free(q);
  robota_query_free(NULL);
  robota_provider_free(p);
}

/* ---- replay provider ---- */
static void test_replay(robota_runtime *rt) {
  robota_provider *p = make_provider(
      rt, "{\"type\":\"scripted\",\"turns\":[{\"text\":\"Recorded answer\"}]}");
  const char *options =
      "{\"system_prompt\":\"t\",\"load_project_context\":false,\"builtin_tools\":false,"
      "\"persistence\":{\"store\":{\"sessions_dir\":\"replay-test/sessions\","
      "\"logs_dir\":\"replay-test/logs\"}}}";
  robota_session_options *o = make_options(options);
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  run_prompt(s, "record me");
  char *id = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_id(s, &id, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_shutdown(s, 10000, &e_));
  robota_session_free(s);
  if (id == NULL) return;
  char config[512];
  snprintf(config, sizeof config,
           "{\"type\":\"replay\",\"log_path\":\"replay-test/logs/%s.jsonl\"}", id);
  robota_string_free(id);
  p = make_provider(rt, config);
  o = make_options(BASE_OPTIONS);
  s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  run_prompt(s, "record me");
  char *messages = messages_of(s);
  CHECK(contains(messages, "Recorded answer"));
  robota_string_free(messages);
  robota_session_free(s);
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_provider_new_json(rt, "{\"type\":\"replay\",\"log_path\":\"/nonexistent\"}",
                                         43, &p, &e_));
}

/* ---- HTTP against mock-llm ---- */
static void test_mock_llm(robota_runtime *rt) {
  const char *url = getenv("ROBOTA_MOCK_URL");
  if (url == NULL) {
    printf("test_host: ROBOTA_MOCK_URL not set, skipping the HTTP test\n");
    return;
  }
  char config[512];
  snprintf(config, sizeof config,
           "{\"type\":\"anthropic\",\"model\":\"mock-model\",\"api_key\":\"test-key\","
           "\"base_url\":\"%s\",\"max_retries\":0}",
           url);
  host perm, tool;
  host_init(&perm, "{\"type\":\"allow_once\"}");
  host_init(&tool, "{\"content\":\"rainy, 12C\"}");
  tool.expect = "\"city\":\"Berlin\"";
  tool.delay_ms = 10;
  robota_provider *p = make_provider(rt, config);
  robota_session_options *o = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_set_permission_handler(
                                      o, on_host_call, &perm, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_SPEC, strlen(LOOKUP_SPEC),
                                                on_host_call, &tool, NULL, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  counts c;
  counts_init(&c);
  uint64_t sub = 0;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_subscribe(s, on_event, &c, NULL, &sub, &e_));
  run_prompt(s, "weather in Berlin?");
  CHECK(atomic_load(&perm.calls) == 1);
  CHECK(atomic_load(&tool.calls) == 1);
  CHECK(atomic_load(&tool.bad_request) == 0);
  CHECK(atomic_load(&c.completes) == 1);
  char *messages = messages_of(s);
  CHECK(contains(messages, "rainy, 12C"));
  CHECK(contains(messages, "Rainy in Berlin over HTTP."));
  robota_string_free(messages);
  robota_session_free(s);
}

/* ---- fork ---- */
static void test_fork(robota_runtime *rt) {
  if (getenv("ROBOTA_SKIP_FORK") != NULL) {
    printf("test_host: fork test skipped\n");
    return;
  }
  robota_provider *p = make_provider(rt, "{\"type\":\"scripted\",\"turns\":[]}");
  robota_session_options *o = make_options(BASE_OPTIONS);
  robota_session *s = make_session(p, o);
  /* The child reports through a pipe: its exit status belongs to leak checkers (the child
   * deliberately abandons the parent's objects, which valgrind counts as lost). */
  int fds[2];
  CHECK(pipe(fds) == 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    int bad = 0;
    robota_error *err = NULL;
    if (robota_session_submit(s, "x", 1, &err) != ROBOTA_STATUS_RUNTIME) bad++;
    if (err == NULL || strstr(robota_error_message(err), "fork") == NULL) bad++;
    robota_error_free(err);
    robota_provider *child = NULL;
    if (robota_provider_new_json(rt, "{\"type\":\"scripted\",\"turns\":[]}", 30, &child,
                                 NULL) != ROBOTA_STATUS_RUNTIME)
      bad++;
    robota_session *s2 = NULL;
    if (robota_session_new(p, o, &s2, NULL) != ROBOTA_STATUS_RUNTIME) bad++;
    if (robota_session_wait_idle(s, 10, NULL) != ROBOTA_STATUS_RUNTIME) bad++;
    robota_query *q = NULL;
    if (robota_query_new(p, "", 0, &q, NULL) != ROBOTA_STATUS_RUNTIME) bad++;
    /* Freeing in the child must not hang. */
    robota_session_free(s);
    robota_provider_free(p);
    if (write(fds[1], &bad, sizeof bad) != (ssize_t)sizeof bad) _exit(3);
    _exit(0);
  }
  CHECK(pid > 0);
  close(fds[1]);
  int bad = -1;
  CHECK(read(fds[0], &bad, sizeof bad) == (ssize_t)sizeof bad);
  close(fds[0]);
  CHECK(bad == 0);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status)); /* it ended by itself: nothing hung or crashed */
  /* The parent is unaffected. */
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_abort(s, &e_));
  robota_session_free(s);
  robota_session_options_free(o);
  robota_provider_free(p);
}

/* ---- invalid inputs of the new functions ---- */
static void noop_call(void *user_data, const char *request, size_t len, robota_completion *c) {
  (void)user_data;
  (void)request;
  (void)len;
  robota_completion_reject(c, NULL, 0, NULL);
}

static void test_invalid_inputs(robota_runtime *rt) {
  const char bad[] = {'{', (char)0xff, '}'};
  robota_session_options *o = NULL;
  host h;
  host_init(&h, "\"x\"");

  /* Options. */
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_options_new("", 0, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_options_new(NULL, 3, &o, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8, robota_session_options_new(bad, 3, &o, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON, robota_session_options_new("{", 1, &o, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON, robota_session_options_new("[]", 2, &o, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_session_options_new("{\"pull_events\":1}", 17, &o, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_session_options_new("{\"max_turns\":\"x\"}", 17, &o, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_options_new(NULL, 0, &o, &e_));
  robota_session_options_free(NULL);

  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_options_set_permission_handler(
                                                 NULL, on_host_call, &h, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_options_set_permission_handler(
                                                 o, NULL, &h, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_options_add_tool(NULL, LOOKUP_SPEC, strlen(LOOKUP_SPEC),
                                                on_host_call, &h, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_options_add_tool(o, NULL, 3, on_host_call, &h, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_options_add_tool(o, LOOKUP_SPEC, strlen(LOOKUP_SPEC), NULL, &h,
                                                host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8,
                robota_session_options_add_tool(o, bad, 3, on_host_call, &h, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_session_options_add_tool(o, "", 0, on_host_call, &h, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_session_options_add_tool(o, "{\"description\":\"x\"}", 19, on_host_call,
                                                &h, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_options_add_tool(o, "{\"name\":\" \"}", 12, on_host_call, &h,
                                                host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_options_add_tool(o, "{\"name\":\"t\",\"input_schema\":1}", 29,
                                                on_host_call, &h, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, LOOKUP_SPEC, strlen(LOOKUP_SPEC), noop_call,
                                                &h, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_options_add_tool(o, LOOKUP_SPEC, strlen(LOOKUP_SPEC), noop_call,
                                                &h, host_free, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_options_add_hook(NULL, "{}", 2, on_host_call, &h, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_options_add_hook(o, NULL, 2, on_host_call, &h, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_options_add_hook(o, "{\"event\":\"Stop\"}", 16, NULL, &h, NULL,
                                                &e_));
  /* An unknown event is a value error, as in every language (the message lists the events). */
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_options_add_hook(o, "{\"event\":\"Nope\"}", 16, on_host_call, &h,
                                                NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_session_options_add_hook(o, "{\"matcher\":\"x\"}", 15, on_host_call, &h,
                                                NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8,
                robota_session_options_add_hook(o, bad, 3, on_host_call, &h, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_options_add_command(NULL, "{}", 2, on_host_call, &h, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_options_add_command(o, NULL, 2, on_host_call, &h, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_options_add_command(
                    o, "{\"name\":\"x\",\"description\":\"y\"}", 30, NULL, &h, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_session_options_add_command(o, "{\"name\":\"x\"}", 12, on_host_call, &h,
                                                   NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_options_add_command(
                    o, "{\"name\":\"/x\",\"description\":\"y\"}", 31, on_host_call, &h, NULL,
                    &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8,
                robota_session_options_add_command(o, bad, 3, on_host_call, &h, NULL, &e_));
  /* Failed registrations never finalize. */
  CHECK(atomic_load(&h.finalized) == 0);

  /* A command colliding with a built-in fails at session creation. */
  robota_provider *p = make_provider(rt, "{\"type\":\"scripted\",\"turns\":[]}");
  robota_session_options *dup = make_options(BASE_OPTIONS);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_command(
                    dup, "{\"name\":\"rename\",\"description\":\"y\"}", 35, on_host_call, &h,
                    NULL, &e_));
  robota_session *s = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_COMMAND, robota_session_new(p, dup, &s, &e_));
  CHECK(s == NULL);
  robota_session_options_free(dup);
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_new(NULL, o, &s, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_new(p, o, NULL, &e_));
  s = make_session(p, NULL);
  robota_session_free(s);
  s = make_session(p, o);
  robota_session_options_free(o);

  /* Host provider. */
  robota_provider *hp = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_provider_new_host(rt, "", 0, NULL, NULL, NULL, &hp, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_provider_new_host(rt, "", 0, on_host_call, NULL, NULL, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_JSON,
                robota_provider_new_host(rt, "{\"nope\":1}", 10, on_host_call, NULL, NULL, &hp,
                                         &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8,
                robota_provider_new_host(rt, bad, 3, on_host_call, NULL, NULL, &hp, &e_));

  /* Completions. */
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_completion_resolve(NULL, "1", 1, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_completion_reject(NULL, "x", 1, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_completion_emit(NULL, "{}", 2, &e_));
  CHECK(robota_completion_is_cancelled(NULL) == 0);
  CHECK(robota_completion_id(NULL) == 0);

  /* Session functions. */
  char *json = NULL;
  result_slot r;
  result_init(&r);
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_cancel_queue(NULL, &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_cancel_queue(s, &json, &e_));
  CHECK(json == NULL);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_cancel_queue(s, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_execute_command(NULL, "help", 4, "", 0, on_result, &r, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_execute_command(s, NULL, 4, "", 0, on_result, &r, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_execute_command(s, "help", 4, "", 0, NULL, &r, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_execute_command(s, "help", 4, NULL, 3, on_result, &r, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8,
                robota_session_execute_command(s, bad, 3, "", 0, on_result, &r, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8,
                robota_session_execute_command(s, "help", 4, bad, 3, on_result, &r, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_execute_command(s, "/", 1, "", 0, on_result, &r, &e_));
  CHECK(atomic_load(&r.done) == 0);
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_execute_command_blocking(
                                                 s, "help", 4, "", 0, 1000, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_execute_command_blocking(
                                                 NULL, "help", 4, "", 0, 1000, &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8, robota_session_execute_command_blocking(
                                                s, bad, 3, "", 0, 1000, &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_list_commands(NULL, &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_list_commands(s, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_get_full_history(NULL, &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_get_full_history(s, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_get_context_state(NULL, &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_get_context_state(s, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_get_name(NULL, &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_get_name(s, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_get_id(NULL, &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_get_id(s, NULL, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_set_name(NULL, "x", 1, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_UTF8, robota_session_set_name(s, bad, 3, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_shutdown(NULL, 10, &e_));
  robota_session_free(s);
  robota_provider_free(p);
  CHECK(wait_for(&h.finalized, 1, 5000) && atomic_load(&h.finalized) == 1);
}

/* The sandbox status: on by default in bypassPermissions (and working on the test machines),
 * off with the `sandbox: false` option, with the reason. */
static void test_sandbox_status(robota_runtime *rt) {
  robota_provider *p = make_provider(rt, "{\"type\":\"scripted\",\"turns\":[]}");
  robota_session_options *o = make_options(
      "{\"system_prompt\": \"test\", \"load_project_context\": false, "
      "\"permission_mode\": \"bypassPermissions\"}");
  robota_session *s = make_session(p, o);
  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_sandbox_status(s, &json, &e_));
  CHECK(json != NULL && contains(json, "\"enabled\":true"));
  CHECK(json != NULL && contains(json, "\"active\":true"));
  CHECK(json != NULL && contains(json, "\"writes_confined\":true"));
  CHECK(json != NULL && contains(json, "\"network\":{\"mode\":\"none\"}"));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_sandbox_status(NULL, &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT, robota_session_sandbox_status(s, NULL, &e_));
  robota_session_free(s);
  robota_session_options_free(o);

  o = make_options(
      "{\"system_prompt\": \"test\", \"load_project_context\": false, "
      "\"permission_mode\": \"bypassPermissions\", \"sandbox\": false}");
  s = make_session(p, o);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_sandbox_status(s, &json, &e_));
  CHECK(json != NULL && contains(json, "\"enabled\":false"));
  CHECK(json != NULL && contains(json, "\"active\":false"));
  CHECK(json != NULL && contains(json, "turned off"));
  robota_string_free(json);
  robota_session_free(s);
  robota_session_options_free(o);
  robota_provider_free(p);
}


/* ---- edit checkpoints and project memory ---- */
static char remove_target[512];

/* A host tool that deletes a file and declares it (`mutates_files`), so rewind restores it. */
static void on_remove(void *user_data, const char *request, size_t len, robota_completion *c) {
  (void)user_data;
  (void)len;
  CHECK(contains(request, "gone.txt"));
  resolve_str(c, remove(remove_target) == 0 ? "\"removed\"" : "{\"content\":\"no\",\"is_error\":true}");
}

static char *read_text(const char *dir, const char *name) {
  static char buf[256];
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (f == NULL) return NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void write_file_in(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f == NULL) return;
  fputs(text, f);
  fclose(f);
}

static void test_edit_checkpoints_and_memory(robota_runtime *rt) {
  char dir[] = "/tmp/robota-c-checkpoints-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  write_file_in(dir, "a.txt", "one\n");
  write_file_in(dir, "gone.txt", "doomed\n");
  snprintf(remove_target, sizeof remove_target, "%s/gone.txt", dir);
  char provider[2048];
  snprintf(provider, sizeof provider,
           "{\"type\":\"scripted\",\"turns\":["
           "{\"tool_calls\":[{\"id\":\"w\",\"name\":\"Write\",\"input\":{\"file_path\":\"%s/new.txt\","
           "\"content\":\"created\\n\"}}]},{\"text\":\"one\"},"
           "{\"tool_calls\":[{\"id\":\"e\",\"name\":\"Edit\",\"input\":{\"file_path\":\"%s/a.txt\","
           "\"old_string\":\"one\",\"new_string\":\"two\"}},"
           "{\"id\":\"r\",\"name\":\"remove_file\",\"input\":{\"path\":\"gone.txt\"}}]},"
           "{\"text\":\"two\"}]}",
           dir, dir);
  char options[1024];
  snprintf(options, sizeof options,
           "{\"cwd\":\"%s\",\"system_prompt\":\"test\",\"load_project_context\":false,"
           "\"permission_mode\":\"bypassPermissions\",\"sandbox\":false}",
           dir);
  const char *remove_spec =
      "{\"name\":\"remove_file\",\"description\":\"Deletes a file.\",\"mutates_files\":[\"path\"]}";
  robota_provider *p = make_provider(rt, provider);
  robota_session_options *o = make_options(options);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_add_tool(o, remove_spec, strlen(remove_spec), on_remove,
                                                NULL, NULL, &e_));
  robota_session *s = make_session(p, o);
  robota_session_options_free(o);
  robota_provider_free(p);
  run_prompt(s, "create");
  run_prompt(s, "edit and delete");
  CHECK(contains(read_text(dir, "a.txt"), "two"));
  CHECK(read_text(dir, "gone.txt") == NULL);

  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_list_edit_checkpoints(s, &json, &e_));
  CHECK(contains(json, "\"id\":\"turn-0001\""));
  CHECK(contains(json, "\"id\":\"turn-0002\""));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_inspect_edit_checkpoint(s, "turn-0002", 9, &json, &e_));
  CHECK(contains(json, "\"display_path\":\"a.txt\""));
  CHECK(contains(json, "\"display_path\":\"gone.txt\""));
  CHECK(contains(json, "\"rollback_range\":[\"turn-0002\"]"));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_INVALID_ARGUMENT,
                robota_session_inspect_edit_checkpoint(s, "turn-0099", 9, &json, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_session_restore_edit_checkpoint(s, NULL, 0, &json, &e_));

  /* Restore to the first prompt: the second is undone. */
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_restore_edit_checkpoint(s, "turn-0001", 9, &json, &e_));
  CHECK(contains(json, "\"rolled_back\":[\"turn-0002\"]"));
  robota_string_free(json);
  json = NULL;
  CHECK(contains(read_text(dir, "a.txt"), "one"));
  CHECK(contains(read_text(dir, "gone.txt"), "doomed"));
  CHECK(contains(read_text(dir, "new.txt"), "created"));
  /* The rewind command, then rolling back the first prompt too. */
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_execute_command_blocking(
                                      s, "rewind", 6, "list", 4, 10000, &json, &e_));
  CHECK(contains(json, "Bash"));
  robota_string_free(json);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_rollback_edit_checkpoint(s, "turn-0001", 9, &json, &e_));
  CHECK(contains(json, "\"deleted\":[\"new.txt\"]"));
  robota_string_free(json);
  json = NULL;
  CHECK(read_text(dir, "new.txt") == NULL);

  /* Project memory through the memory command. */
  const char *add = "add project build Run make check before pushing";
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_execute_command_blocking(
                                      s, "memory", 6, add, strlen(add), 10000, &json, &e_));
  CHECK(contains(json, "\"success\":true"));
  robota_string_free(json);
  json = NULL;
  const char *secret = "add project ci token ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU";
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_execute_command_blocking(s, "memory", 6, secret, strlen(secret),
                                                        10000, &json, &e_));
  CHECK(contains(json, "\"success\":false"));
  CHECK(contains(json, "\"category\":\"api_token\""));
  robota_string_free(json);
  json = NULL;
  CHECK(contains(read_text(dir, ".robota/memory/topics/build.md"), "Run make check"));
  CHECK(read_text(dir, ".robota/memory/topics/ci.md") == NULL);
  robota_session_free(s);
}

int main(void) {
  robota_runtime *rt = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_runtime_new(2, &rt, &e_));
  if (rt == NULL) return 1;
  test_tool_allowed(rt);
  test_permission_denied(rt);
  test_allow_session(rt);
  test_allow_always(rt);
  test_commands(rt);
  test_skills(rt);
  test_custom_commands(rt);
  test_plugins(rt);
  test_mcp_servers(rt);
  test_hook_blocks_tool(rt);
  test_submit_as_typed(rt);
  test_host_provider(rt);
  test_abort_from_callback(rt);
  test_free_in_flight(rt);
  test_cancel_queue(rt);
  test_submit_tracked(rt);
  test_outcomes(rt);
  test_malformed_answers(rt);
  test_query(rt);
  test_replay(rt);
  test_mock_llm(rt);
  test_fork(rt);
  test_invalid_inputs(rt);
  test_sandbox_status(rt);
  test_edit_checkpoints_and_memory(rt);
  /* Wait for the engine's threads so leak checkers see everything released. */
  robota_runtime_shutdown(rt, 5000);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("test_host: all checks passed\n");
  return 0;
}
