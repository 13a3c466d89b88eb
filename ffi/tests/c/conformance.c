/* conformance.c: the C runner of the cross-language conformance scenarios
 * (tests/conformance/README.md). Every scenario file given on the command line is played
 * against a robota session through the C ABI: the scripted provider, host tools and permission
 * answers implemented here with completion objects, a pull subscription for the events. The
 * normalized events, messages, command results, name and response are compared with the
 * scenario's `expected` exactly as the Rust runner (core/tests/conformance.rs) does.
 *
 * Build: -std=c11 -Wall -Wextra -Werror -pedantic -pthread, linked with librobota and cJSON
 * (libcjson-dev). Usage: conformance SCENARIO.json... ; exits 0 when all pass. With
 * CONFORMANCE_PRINT set, prints every actual normalized result. */
#include "common.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <unistd.h>

#define WAIT_MS 20000

static const char *KEPT_EVENTS[] = {"text_delta",         "thinking", "tool_start",
                                    "tool_end",           "complete", "interrupted",
                                    "permission_request", "error",    "skill_activation"};

/* ---- small cJSON helpers ---- */

static cJSON *read_json_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)size + 1);
  size_t got = fread(text, 1, (size_t)size, f);
  text[got] = '\0';
  fclose(f);
  cJSON *json = cJSON_Parse(text);
  free(text);
  return json;
}

/* A copy of `item` (or null when NULL). */
static cJSON *copy_or_null(const cJSON *item) {
  return item != NULL ? cJSON_Duplicate(item, 1) : cJSON_CreateNull();
}

static const char *str_of(const cJSON *object, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
  return cJSON_IsString(item) ? item->valuestring : NULL;
}

static int type_is(const cJSON *event, const char *type) {
  const char *t = str_of(event, "type");
  return t != NULL && strcmp(t, type) == 0;
}

/* Unknown keys are an error (as in the Rust runner) so typos do not skip checks. */
static int only_keys(const cJSON *object, const char *const *keys, size_t n, const char *what) {
  const cJSON *item;
  cJSON_ArrayForEach(item, object) {
    int known = 0;
    for (size_t i = 0; i < n; i++)
      if (strcmp(item->string, keys[i]) == 0) known = 1;
    if (!known) {
      fprintf(stderr, "%s: unknown key `%s`\n", what, item->string);
      return 0;
    }
  }
  return 1;
}

/* ---- host tools ---- */

typedef struct {
  long delay_ms;
  char *answer; /* {"content", "is_error"} */
} tool_spec;

/* Tool threads still running (each consumes its completion before it ends). */
static atomic_int live_threads;

/* One running call. It owns copies of what it needs: the tool's state may be finalized (the
 * session freed) while the call still waits. */
typedef struct {
  robota_completion *completion;
  long delay_ms;
  char *answer;
} tool_call;

static void *tool_thread(void *arg) {
  tool_call *call = (tool_call *)arg;
  long waited = 0;
  int aborted = 0;
  while (waited < call->delay_ms) {
    if (robota_completion_is_cancelled(call->completion)) {
      aborted = 1;
      break;
    }
    sleep_ms(5);
    waited += 5;
  }
  resolve_str(call->completion,
              aborted ? "{\"content\":\"aborted\",\"is_error\":true}" : call->answer);
  free(call->answer);
  free(call);
  atomic_fetch_sub(&live_threads, 1);
  return NULL;
}

static void on_tool(void *user_data, const char *request, size_t len, robota_completion *c) {
  tool_spec *tool = (tool_spec *)user_data;
  (void)request;
  (void)len;
  if (tool->delay_ms <= 0) {
    resolve_str(c, tool->answer);
    return;
  }
  tool_call *call = malloc(sizeof *call);
  call->completion = c;
  call->delay_ms = tool->delay_ms;
  call->answer = malloc(strlen(tool->answer) + 1);
  strcpy(call->answer, tool->answer);
  pthread_t thread;
  atomic_fetch_add(&live_threads, 1);
  if (pthread_create(&thread, NULL, tool_thread, call) != 0) {
    atomic_fetch_sub(&live_threads, 1);
    resolve_str(c, tool->answer);
    free(call->answer);
    free(call);
    return;
  }
  pthread_detach(thread);
}

static void free_tool(void *user_data) {
  tool_spec *tool = (tool_spec *)user_data;
  free(tool->answer);
  free(tool);
}

/* ---- host commands ---- */

/* A scenario's host command: performs its operations on the live command context, then
 * answers its result. */
static void on_host_command(void *user_data, const char *request, size_t len,
                            robota_completion *c) {
  const cJSON *spec = (const cJSON *)user_data;
  (void)request;
  (void)len;
  const robota_command_context *ctx = robota_completion_command_context(c);
  const cJSON *op;
  cJSON_ArrayForEach(op, cJSON_GetObjectItemCaseSensitive(spec, "operations")) {
    char *op_text = cJSON_PrintUnformatted(op);
    char *out = NULL;
    robota_error *err = NULL;
    robota_status st = robota_command_context_call(ctx, op_text, strlen(op_text), &out, &err);
    cJSON_free(op_text);
    robota_string_free(out);
    if (st != ROBOTA_STATUS_OK) {
      char message[512];
      snprintf(message, sizeof message, "a context operation failed (%d): %s", (int)st,
               robota_error_message(err));
      robota_error_free(err);
      robota_completion_reject(c, message, strlen(message), NULL);
      return;
    }
  }
  cJSON *answer = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(spec, "result"), 1);
  cJSON_AddTrueToObject(answer, "success");
  char *answer_text = cJSON_PrintUnformatted(answer);
  cJSON_Delete(answer);
  resolve_str(c, answer_text);
  cJSON_free(answer_text);
}

static void free_host_command(void *user_data) { cJSON_Delete((cJSON *)user_data); }

/* ---- permission answers ---- */

typedef struct {
  pthread_mutex_t lock;
  cJSON *answers; /* the scenario's permission_answers (owned copy) */
  int next;
  char problems[2048];
} permissions;

static void add_problem(permissions *p, const char *text) {
  size_t used = strlen(p->problems);
  snprintf(p->problems + used, sizeof p->problems - used, "%s%s", used ? "; " : "", text);
}

static void on_permission(void *user_data, const char *request, size_t len,
                          robota_completion *c) {
  permissions *p = (permissions *)user_data;
  (void)len;
  cJSON *req = cJSON_Parse(request);
  const char *tool = req != NULL ? str_of(req, "tool_name") : NULL;
  char problem[512];
  pthread_mutex_lock(&p->lock);
  cJSON *answer = cJSON_GetArrayItem(p->answers, p->next);
  if (answer != NULL) p->next++;
  char *reply = NULL;
  if (answer == NULL) {
    snprintf(problem, sizeof problem,
             "unexpected permission request for `%s` (no answers left)", tool ? tool : "?");
    add_problem(p, problem);
  } else {
    const char *want = str_of(answer, "tool");
    const char *kind = str_of(answer, "answer");
    if (tool == NULL || want == NULL || strcmp(tool, want) != 0) {
      snprintf(problem, sizeof problem,
               "permission request for `%s`, but the next answer is for `%s`", tool ? tool : "?",
               want ? want : "?");
      add_problem(p, problem);
    }
    cJSON *out = cJSON_CreateObject();
    if (kind != NULL && strcmp(kind, "allow_once") == 0) {
      cJSON_AddStringToObject(out, "type", "allow_once");
    } else if (kind != NULL && strcmp(kind, "allow_session") == 0) {
      cJSON_AddStringToObject(out, "type", "allow_session");
    } else if (kind != NULL && strcmp(kind, "allow_with_input") == 0) {
      const cJSON *input = cJSON_GetObjectItemCaseSensitive(answer, "input");
      cJSON_AddStringToObject(out, "type", "allow_with_input");
      cJSON_AddItemToObject(out, "input",
                            input ? cJSON_Duplicate(input, 1) : cJSON_CreateObject());
    } else if (kind != NULL && strcmp(kind, "deny") == 0) {
      const char *message = str_of(answer, "message");
      cJSON_AddStringToObject(out, "type", "deny");
      cJSON_AddStringToObject(out, "message", message ? message : "");
    } else {
      snprintf(problem, sizeof problem, "unknown permission answer `%s`", kind ? kind : "?");
      add_problem(p, problem);
      cJSON_AddStringToObject(out, "type", "deny");
      cJSON_AddStringToObject(out, "message", "unknown answer");
    }
    reply = cJSON_PrintUnformatted(out);
    cJSON_Delete(out);
  }
  pthread_mutex_unlock(&p->lock);
  cJSON_Delete(req);
  if (reply == NULL) {
    resolve_str(c, "{\"type\":\"deny\",\"message\":\"no answer scripted\"}");
  } else {
    resolve_str(c, reply);
    cJSON_free(reply);
  }
}

static void free_perms(void *user_data) {
  permissions *p = (permissions *)user_data;
  cJSON_Delete(p->answers);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

/* ---- normalization (README "Normalization") ---- */

static int kept(const char *type) {
  for (size_t i = 0; i < sizeof KEPT_EVENTS / sizeof KEPT_EVENTS[0]; i++)
    if (strcmp(type, KEPT_EVENTS[i]) == 0) return 1;
  return 0;
}

static cJSON *normalize_events(const cJSON *events) {
  cJSON *out = cJSON_CreateArray();
  const cJSON *event;
  cJSON_ArrayForEach(event, events) {
    const char *type = str_of(event, "type");
    if (type == NULL || !kept(type)) continue;
    cJSON *n = cJSON_CreateObject();
    cJSON_AddStringToObject(n, "type", type);
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(event, "tool");
    const cJSON *outcome = cJSON_GetObjectItemCaseSensitive(event, "outcome");
    if (strcmp(type, "text_delta") == 0 || strcmp(type, "thinking") == 0) {
      const char *text = str_of(event, "text");
      int count = cJSON_GetArraySize(out);
      cJSON *previous = count > 0 ? cJSON_GetArrayItem(out, count - 1) : NULL;
      if (previous != NULL && type_is(previous, type)) {
        const char *before = str_of(previous, "text");
        size_t size = strlen(before ? before : "") + strlen(text ? text : "") + 1;
        char *joined = malloc(size);
        snprintf(joined, size, "%s%s", before ? before : "", text ? text : "");
        cJSON_ReplaceItemInObjectCaseSensitive(previous, "text", cJSON_CreateString(joined));
        free(joined);
        cJSON_Delete(n);
        continue;
      }
      cJSON_AddStringToObject(n, "text", text ? text : "");
    } else if (strcmp(type, "tool_start") == 0) {
      cJSON_AddItemToObject(n, "name", copy_or_null(cJSON_GetObjectItemCaseSensitive(tool, "name")));
      cJSON_AddItemToObject(n, "first_arg",
                            copy_or_null(cJSON_GetObjectItemCaseSensitive(tool, "first_arg")));
    } else if (strcmp(type, "tool_end") == 0) {
      cJSON_AddItemToObject(n, "name", copy_or_null(cJSON_GetObjectItemCaseSensitive(tool, "name")));
      cJSON_AddItemToObject(n, "result",
                            copy_or_null(cJSON_GetObjectItemCaseSensitive(tool, "result")));
      const cJSON *data = cJSON_GetObjectItemCaseSensitive(tool, "tool_result_data");
      if (data != NULL) cJSON_AddItemToObject(n, "tool_result_data", cJSON_Duplicate(data, 1));
    } else if (strcmp(type, "permission_request") == 0) {
      cJSON_AddItemToObject(n, "tool_name",
                            copy_or_null(cJSON_GetObjectItemCaseSensitive(event, "tool_name")));
      cJSON_AddItemToObject(n, "input",
                            copy_or_null(cJSON_GetObjectItemCaseSensitive(event, "input")));
    } else if (strcmp(type, "complete") == 0) {
      cJSON_AddItemToObject(n, "response",
                            copy_or_null(cJSON_GetObjectItemCaseSensitive(outcome, "response")));
      cJSON_AddItemToObject(n, "stop_reason", copy_or_null(cJSON_GetObjectItemCaseSensitive(
                                                  outcome, "stop_reason")));
      cJSON_AddItemToObject(n, "tools_executed", copy_or_null(cJSON_GetObjectItemCaseSensitive(
                                                     outcome, "tools_executed")));
      const cJSON *structured = cJSON_GetObjectItemCaseSensitive(outcome, "structured_output");
      if (structured != NULL)
        cJSON_AddItemToObject(n, "structured_output", cJSON_Duplicate(structured, 1));
    } else if (strcmp(type, "error") == 0) {
      cJSON_AddItemToObject(n, "message",
                            copy_or_null(cJSON_GetObjectItemCaseSensitive(event, "message")));
    } else if (strcmp(type, "skill_activation") == 0) {
      const cJSON *data = cJSON_GetObjectItemCaseSensitive(event, "data");
      static const char *const KEYS[] = {"skill_name", "invocation", "mode", "status"};
      for (size_t k = 0; k < sizeof KEYS / sizeof KEYS[0]; k++)
        cJSON_AddItemToObject(n, KEYS[k],
                              copy_or_null(cJSON_GetObjectItemCaseSensitive(data, KEYS[k])));
    }
    cJSON_AddItemToArray(out, n);
  }
  return out;
}

static cJSON *normalize_message(const cJSON *message) {
  cJSON *out = cJSON_CreateObject();
  cJSON_AddItemToObject(out, "role", copy_or_null(cJSON_GetObjectItemCaseSensitive(message, "role")));
  const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(message, "content");
  size_t text_len = 0;
  const cJSON *block;
  cJSON_ArrayForEach(block, blocks) {
    const char *text = str_of(block, "text");
    if (type_is(block, "text") && text != NULL) text_len += strlen(text);
  }
  if (text_len > 0) {
    char *text = calloc(text_len + 1, 1);
    cJSON_ArrayForEach(block, blocks) {
      const char *part = str_of(block, "text");
      if (type_is(block, "text") && part != NULL) strcat(text, part);
    }
    cJSON_AddStringToObject(out, "text", text);
    free(text);
  }
  cJSON *uses = cJSON_CreateArray();
  cJSON *results = cJSON_CreateArray();
  cJSON_ArrayForEach(block, blocks) {
    if (type_is(block, "tool_use")) {
      cJSON *use = cJSON_CreateObject();
      cJSON_AddItemToObject(use, "name", copy_or_null(cJSON_GetObjectItemCaseSensitive(block, "name")));
      cJSON_AddItemToObject(use, "input",
                            copy_or_null(cJSON_GetObjectItemCaseSensitive(block, "input")));
      cJSON_AddItemToArray(uses, use);
    } else if (type_is(block, "tool_result")) {
      cJSON *result = cJSON_CreateObject();
      cJSON_AddItemToObject(result, "content",
                            copy_or_null(cJSON_GetObjectItemCaseSensitive(block, "content")));
      const cJSON *is_error = cJSON_GetObjectItemCaseSensitive(block, "is_error");
      cJSON_AddItemToObject(result, "is_error",
                            is_error ? cJSON_Duplicate(is_error, 1) : cJSON_CreateFalse());
      cJSON_AddItemToArray(results, result);
    }
  }
  if (cJSON_GetArraySize(uses) > 0)
    cJSON_AddItemToObject(out, "tool_uses", uses);
  else
    cJSON_Delete(uses);
  if (cJSON_GetArraySize(results) > 0)
    cJSON_AddItemToObject(out, "tool_results", results);
  else
    cJSON_Delete(results);
  const char *state = str_of(message, "state");
  if (state != NULL && strcmp(state, "interrupted") == 0)
    cJSON_AddStringToObject(out, "state", "interrupted");
  return out;
}

/* ---- one scenario ---- */

typedef struct {
  const char *name;
  char problem[4096];
} run_state;

static void fail_run(run_state *r, const char *what, robota_status status, robota_error *err) {
  if (r->problem[0] == '\0')
    snprintf(r->problem, sizeof r->problem, "%s failed (%d): %s", what, (int)status,
             robota_error_message(err));
}

/* Pulls one event into `events`; returns its type match against `until` (1), 0 otherwise, -1
 * on timeout or error. */
static int pull_event(robota_session *s, uint64_t sub, long timeout_ms, cJSON *events,
                      const char *until, run_state *r) {
  char *json = NULL;
  robota_error *err = NULL;
  robota_status st = robota_session_next_event(s, sub, (uint64_t)timeout_ms, &json, &err);
  if (st != ROBOTA_STATUS_OK) {
    if (st != ROBOTA_STATUS_TIMEOUT || timeout_ms > 0) fail_run(r, "next_event", st, err);
    robota_error_free(err);
    return -1;
  }
  cJSON *event = cJSON_Parse(json);
  robota_string_free(json);
  if (event == NULL) {
    snprintf(r->problem, sizeof r->problem, "an event is not JSON");
    return -1;
  }
  int match = until != NULL && type_is(event, until);
  cJSON_AddItemToArray(events, event);
  return match;
}

/* The scenario's MCP servers from the catalog in tests/conformance/README.md; the servers'
 * folder comes from ROBOTA_MCP_SERVERS_DIR (set by the test that runs this program). */
static cJSON *mcp_servers(const cJSON *names) {
  const char *dir = getenv("ROBOTA_MCP_SERVERS_DIR");
  cJSON *servers = cJSON_CreateObject();
  const cJSON *name;
  cJSON_ArrayForEach(name, names) {
    if (!cJSON_IsString(name) || strcmp(name->valuestring, "pytools") != 0 || dir == NULL) {
      fprintf(stderr, "unknown MCP server or ROBOTA_MCP_SERVERS_DIR unset\n");
      exit(2);
    }
    char python[4096], script[4096];
    snprintf(python, sizeof python, "%s/.venv/bin/python", dir);
    snprintf(script, sizeof script, "%s/python_server.py", dir);
    cJSON *server = cJSON_CreateObject();
    cJSON_AddStringToObject(server, "command", python);
    cJSON *args = cJSON_AddArrayToObject(server, "args");
    cJSON_AddItemToArray(args, cJSON_CreateString(script));
    cJSON_AddItemToObject(servers, name->valuestring, server);
  }
  return servers;
}

static cJSON *session_options(const cJSON *scenario, const char *cwd, const char *home) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "cwd", cwd);
  cJSON_AddFalseToObject(o, "load_project_context");
  cJSON_AddBoolToObject(o, "builtin_tools",
                        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(scenario, "builtin_tools")));
  const cJSON *skills = cJSON_GetObjectItemCaseSensitive(scenario, "skills");
  if (skills != NULL) cJSON_AddItemToObject(o, "skills", cJSON_Duplicate(skills, 1));
  const cJSON *commands = cJSON_GetObjectItemCaseSensitive(scenario, "commands");
  if (commands != NULL) cJSON_AddItemToObject(o, "commands", cJSON_Duplicate(commands, 1));
  const cJSON *mcp_names = cJSON_GetObjectItemCaseSensitive(scenario, "mcp_servers");
  if (mcp_names != NULL) cJSON_AddItemToObject(o, "mcp_servers", mcp_servers(mcp_names));
  /* Structured output: passed unchanged as the session options of the same names. */
  static const char *const STRUCTURED[] = {"output_format", "max_structured_output_retries"};
  for (size_t k = 0; k < sizeof STRUCTURED / sizeof STRUCTURED[0]; k++) {
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(scenario, STRUCTURED[k]);
    if (value != NULL) cJSON_AddItemToObject(o, STRUCTURED[k], cJSON_Duplicate(value, 1));
  }
  const cJSON *settings = cJSON_GetObjectItemCaseSensitive(scenario, "settings");
  if (settings != NULL) {
    cJSON *permissions = cJSON_CreateObject();
    const char *mode = str_of(settings, "permission_mode");
    if (mode != NULL) cJSON_AddStringToObject(permissions, "defaultMode", mode);
    const cJSON *allow = cJSON_GetObjectItemCaseSensitive(settings, "allow");
    const cJSON *deny = cJSON_GetObjectItemCaseSensitive(settings, "deny");
    cJSON_AddItemToObject(permissions, "allow",
                          allow ? cJSON_Duplicate(allow, 1) : cJSON_CreateArray());
    cJSON_AddItemToObject(permissions, "deny", deny ? cJSON_Duplicate(deny, 1) : cJSON_CreateArray());
    cJSON *s = cJSON_CreateObject();
    cJSON_AddItemToObject(s, "permissions", permissions);
    cJSON_AddItemToObject(o, "settings", s);
    cJSON_AddStringToObject(o, "home", home);
  }
  return o;
}

/* Plays the scenario; returns the actual normalized result (NULL when it could not run; the
 * reason is in r->problem). */
static cJSON *play(const cJSON *scenario, robota_runtime *rt, run_state *r) {
  char cwd[] = "/tmp/robota-conformance-cwd-XXXXXX";
  char home[] = "/tmp/robota-conformance-home-XXXXXX";
  if (mkdtemp(cwd) == NULL || mkdtemp(home) == NULL) {
    snprintf(r->problem, sizeof r->problem, "cannot create temp dirs");
    return NULL;
  }
  cJSON *result = NULL;
  robota_error *err = NULL;
  robota_status st;

  /* The provider. */
  cJSON *provider_json = cJSON_CreateObject();
  cJSON_AddStringToObject(provider_json, "type", "scripted");
  const cJSON *turns = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(scenario, "provider"), "turns");
  cJSON_AddItemToObject(provider_json, "turns", copy_or_null(turns));
  char *provider_text = cJSON_PrintUnformatted(provider_json);
  cJSON_Delete(provider_json);
  robota_provider *provider = NULL;
  st = robota_provider_new_json(rt, provider_text, strlen(provider_text), &provider, &err);
  cJSON_free(provider_text);
  if (st != ROBOTA_STATUS_OK) {
    fail_run(r, "provider", st, err);
    robota_error_free(err);
    goto dirs;
  }

  /* Options: data, host tools, permission handler. */
  cJSON *options_json = session_options(scenario, cwd, home);
  char *options_text = cJSON_PrintUnformatted(options_json);
  cJSON_Delete(options_json);
  robota_session_options *options = NULL;
  st = robota_session_options_new(options_text, strlen(options_text), &options, &err);
  cJSON_free(options_text);
  if (st != ROBOTA_STATUS_OK) {
    fail_run(r, "options", st, err);
    robota_error_free(err);
    robota_provider_free(provider);
    goto dirs;
  }
  const cJSON *tool;
  cJSON_ArrayForEach(tool, cJSON_GetObjectItemCaseSensitive(scenario, "host_tools")) {
    cJSON *spec = cJSON_CreateObject();
    cJSON_AddItemToObject(spec, "name", copy_or_null(cJSON_GetObjectItemCaseSensitive(tool, "name")));
    cJSON_AddItemToObject(spec, "description",
                          copy_or_null(cJSON_GetObjectItemCaseSensitive(tool, "description")));
    cJSON_AddItemToObject(spec, "input_schema",
                          copy_or_null(cJSON_GetObjectItemCaseSensitive(tool, "input_schema")));
    const cJSON *read_only = cJSON_GetObjectItemCaseSensitive(tool, "read_only");
    cJSON_AddBoolToObject(spec, "read_only", cJSON_IsTrue(read_only));
    char *spec_text = cJSON_PrintUnformatted(spec);
    cJSON_Delete(spec);
    const cJSON *result_spec = cJSON_GetObjectItemCaseSensitive(tool, "result");
    cJSON *answer = cJSON_CreateObject();
    cJSON_AddItemToObject(answer, "content",
                          copy_or_null(cJSON_GetObjectItemCaseSensitive(result_spec, "content")));
    cJSON_AddBoolToObject(answer, "is_error",
                          cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result_spec, "is_error")));
    tool_spec *host_tool = malloc(sizeof *host_tool);
    host_tool->answer = cJSON_PrintUnformatted(answer);
    cJSON_Delete(answer);
    const cJSON *delay = cJSON_GetObjectItemCaseSensitive(tool, "delay_ms");
    host_tool->delay_ms = cJSON_IsNumber(delay) ? (long)delay->valuedouble : 0;
    st = robota_session_options_add_tool(options, spec_text, strlen(spec_text), on_tool, host_tool,
                                         free_tool, &err);
    cJSON_free(spec_text);
    if (st != ROBOTA_STATUS_OK) {
      fail_run(r, "add_tool", st, err);
      robota_error_free(err);
      err = NULL;
      free_tool(host_tool);
    }
  }
  const cJSON *host_command;
  cJSON_ArrayForEach(host_command, cJSON_GetObjectItemCaseSensitive(scenario, "host_commands")) {
    cJSON *descriptor = cJSON_CreateObject();
    cJSON_AddItemToObject(descriptor, "name",
                          copy_or_null(cJSON_GetObjectItemCaseSensitive(host_command, "name")));
    cJSON_AddItemToObject(
        descriptor, "description",
        copy_or_null(cJSON_GetObjectItemCaseSensitive(host_command, "description")));
    char *descriptor_text = cJSON_PrintUnformatted(descriptor);
    cJSON_Delete(descriptor);
    cJSON *spec = cJSON_Duplicate(host_command, 1);
    st = robota_session_options_add_command(options, descriptor_text, strlen(descriptor_text),
                                            on_host_command, spec, free_host_command, &err);
    cJSON_free(descriptor_text);
    if (st != ROBOTA_STATUS_OK) {
      fail_run(r, "add_command", st, err);
      robota_error_free(err);
      err = NULL;
      cJSON_Delete(spec);
    }
  }
  permissions *perms = calloc(1, sizeof *perms);
  pthread_mutex_init(&perms->lock, NULL);
  const cJSON *answers = cJSON_GetObjectItemCaseSensitive(scenario, "permission_answers");
  perms->answers = answers ? cJSON_Duplicate(answers, 1) : cJSON_CreateArray();
  st = robota_session_options_set_permission_handler(options, on_permission, perms, free_perms,
                                                     &err);
  if (st != ROBOTA_STATUS_OK) {
    fail_run(r, "set_permission_handler", st, err);
    robota_error_free(err);
    err = NULL;
    free_perms(perms);
  }
  robota_session *s = NULL;
  st = robota_session_new(provider, options, &s, &err);
  robota_session_options_free(options);
  robota_provider_free(provider);
  if (st != ROBOTA_STATUS_OK) {
    fail_run(r, "session", st, err);
    robota_error_free(err);
    goto dirs;
  }
  uint64_t sub = 0;
  st = robota_session_subscribe_pull(s, &sub, &err);
  if (st != ROBOTA_STATUS_OK) {
    fail_run(r, "subscribe_pull", st, err);
    robota_error_free(err);
    goto session;
  }

  cJSON *events = cJSON_CreateArray();
  cJSON *commands = cJSON_CreateArray();
  cJSON *background_tasks = cJSON_CreateArray();
  const cJSON *action;
  cJSON_ArrayForEach(action, cJSON_GetObjectItemCaseSensitive(scenario, "actions")) {
    if (r->problem[0] != '\0') break;
    const cJSON *submit = cJSON_GetObjectItemCaseSensitive(action, "submit");
    const cJSON *abort_after = cJSON_GetObjectItemCaseSensitive(action, "abort_after_event");
    const cJSON *command = cJSON_GetObjectItemCaseSensitive(action, "command");
    const cJSON *wait_idle = cJSON_GetObjectItemCaseSensitive(action, "wait_idle");
    const cJSON *start_subagent =
        cJSON_GetObjectItemCaseSensitive(action, "start_background_subagent");
    const cJSON *list_tasks = cJSON_GetObjectItemCaseSensitive(action, "list_background_tasks");
    const cJSON *cancel_task = cJSON_GetObjectItemCaseSensitive(action, "cancel_background_task");
    if (cJSON_IsString(submit)) {
      st = robota_session_submit(s, submit->valuestring, strlen(submit->valuestring), &err);
      if (st != ROBOTA_STATUS_OK) fail_run(r, "submit", st, err);
    } else if (cJSON_IsString(abort_after)) {
      int found = 0;
      while (!found) {
        int got = pull_event(s, sub, WAIT_MS, events, abort_after->valuestring, r);
        if (got < 0) {
          if (r->problem[0] == '\0')
            snprintf(r->problem, sizeof r->problem, "no `%s` event within %d ms",
                     abort_after->valuestring, WAIT_MS);
          break;
        }
        found = got;
      }
      st = robota_session_abort(s, &err);
      if (st != ROBOTA_STATUS_OK) fail_run(r, "abort", st, err);
    } else if (cJSON_IsObject(command)) {
      const char *name = str_of(command, "name");
      const char *args = str_of(command, "args");
      char *json = NULL;
      st = robota_session_execute_command_blocking(s, name ? name : "", name ? strlen(name) : 0,
                                                   args ? args : "", args ? strlen(args) : 0,
                                                   WAIT_MS, &json, &err);
      if (st != ROBOTA_STATUS_OK) {
        fail_run(r, "command", st, err);
      } else {
        cJSON *parsed = cJSON_Parse(json);
        cJSON *entry = cJSON_CreateObject();
        cJSON_AddStringToObject(entry, "name", name ? name : "");
        cJSON_AddItemToObject(entry, "success",
                              copy_or_null(cJSON_GetObjectItemCaseSensitive(parsed, "success")));
        const cJSON *effects = cJSON_GetObjectItemCaseSensitive(parsed, "effects");
        cJSON_AddItemToObject(entry, "effects",
                              effects ? cJSON_Duplicate(effects, 1) : cJSON_CreateArray());
        cJSON_AddItemToArray(commands, entry);
        cJSON_Delete(parsed);
      }
      robota_string_free(json);
    } else if (wait_idle != NULL) {
      st = robota_session_wait_idle(s, WAIT_MS, &err);
      if (st != ROBOTA_STATUS_OK) fail_run(r, "wait_idle", st, err);
    } else if (cJSON_IsObject(start_subagent)) {
      /* The action's object is the request as robota_session_start_background_subagent reads it. */
      char *request = cJSON_PrintUnformatted(start_subagent);
      char *json = NULL;
      st = robota_session_start_background_subagent(s, request, strlen(request), &json, &err);
      if (st != ROBOTA_STATUS_OK) fail_run(r, "start_background_subagent", st, err);
      robota_string_free(json);
      cJSON_free(request);
    } else if (list_tasks != NULL) {
      char *json = NULL;
      st = robota_session_list_background_tasks(s, &json, &err);
      if (st != ROBOTA_STATUS_OK) {
        fail_run(r, "list_background_tasks", st, err);
      } else {
        cJSON *tasks = cJSON_Parse(json);
        cJSON *listed = cJSON_CreateArray();
        const cJSON *task;
        cJSON_ArrayForEach(task, tasks) {
          static const char *const KEYS[] = {"id", "kind", "status", "command"};
          cJSON *n = cJSON_CreateObject();
          for (size_t k = 0; k < sizeof KEYS / sizeof KEYS[0]; k++)
            cJSON_AddItemToObject(n, KEYS[k],
                                  copy_or_null(cJSON_GetObjectItemCaseSensitive(task, KEYS[k])));
          cJSON_AddItemToArray(listed, n);
        }
        cJSON_AddItemToArray(background_tasks, listed);
        cJSON_Delete(tasks);
      }
      robota_string_free(json);
    } else if (cJSON_IsString(cancel_task)) {
      char *json = NULL;
      st = robota_session_cancel_background_task(s, cancel_task->valuestring,
                                                 strlen(cancel_task->valuestring), &json, &err);
      if (st != ROBOTA_STATUS_OK) fail_run(r, "cancel_background_task", st, err);
      robota_string_free(json);
    } else {
      snprintf(r->problem, sizeof r->problem, "unknown action");
    }
    robota_error_free(err);
    err = NULL;
  }
  /* The implicit final wait_idle, then drain what is queued. */
  st = robota_session_wait_idle(s, WAIT_MS, &err);
  if (st != ROBOTA_STATUS_OK) fail_run(r, "final wait_idle", st, err);
  robota_error_free(err);
  err = NULL;
  while (pull_event(s, sub, 0, events, NULL, r) >= 0) {
  }

  /* Envelopes: this session's id, strictly increasing seq. */
  char *session_id = NULL;
  if (robota_session_get_id(s, &session_id, NULL) == ROBOTA_STATUS_OK) {
    double last = 0;
    const cJSON *event;
    cJSON_ArrayForEach(event, events) {
      const cJSON *seq = cJSON_GetObjectItemCaseSensitive(event, "seq");
      const char *sid = str_of(event, "session_id");
      if (!cJSON_IsNumber(seq) || seq->valuedouble <= last) {
        snprintf(r->problem, sizeof r->problem, "seq does not increase");
      } else {
        last = seq->valuedouble;
      }
      if (sid == NULL || strcmp(sid, session_id) != 0)
        snprintf(r->problem, sizeof r->problem, "wrong session_id in an event");
    }
  }
  robota_string_free(session_id);

  /* The actual result, shaped like `expected`. */
  const cJSON *expected = cJSON_GetObjectItemCaseSensitive(scenario, "expected");
  result = cJSON_CreateObject();
  if (cJSON_GetObjectItemCaseSensitive(expected, "events") != NULL)
    cJSON_AddItemToObject(result, "events", normalize_events(events));
  if (cJSON_GetObjectItemCaseSensitive(expected, "messages") != NULL) {
    char *messages_text = messages_of(s);
    cJSON *messages = cJSON_Parse(messages_text);
    robota_string_free(messages_text);
    cJSON *normalized = cJSON_CreateArray();
    const cJSON *message;
    cJSON_ArrayForEach(message, messages) {
      cJSON_AddItemToArray(normalized, normalize_message(message));
    }
    cJSON_Delete(messages);
    cJSON_AddItemToObject(result, "messages", normalized);
  }
  if (cJSON_GetObjectItemCaseSensitive(expected, "background_tasks") != NULL) {
    cJSON_AddItemToObject(result, "background_tasks", background_tasks);
    background_tasks = NULL;
  }
  if (cJSON_GetObjectItemCaseSensitive(expected, "response") != NULL) {
    const cJSON *response = NULL;
    const cJSON *event;
    cJSON_ArrayForEach(event, events) {
      if (type_is(event, "complete") || type_is(event, "interrupted")) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(event, "outcome"), "response");
        response = cJSON_IsString(text) ? text : NULL;
      }
    }
    cJSON_AddItemToObject(result, "response", copy_or_null(response));
  }
  if (cJSON_GetObjectItemCaseSensitive(expected, "commands") != NULL) {
    cJSON_AddItemToObject(result, "commands", commands);
    commands = NULL;
  }
  if (cJSON_GetObjectItemCaseSensitive(expected, "name") != NULL) {
    char *name = NULL;
    robota_session_get_name(s, &name, NULL);
    cJSON_AddItemToObject(result, "name", name ? cJSON_CreateString(name) : cJSON_CreateNull());
    robota_string_free(name);
  }
  cJSON_Delete(commands);
  cJSON_Delete(background_tasks);
  cJSON_Delete(events);
  pthread_mutex_lock(&perms->lock);
  if (perms->problems[0] != '\0' && r->problem[0] == '\0')
    snprintf(r->problem, sizeof r->problem, "permission answers: %s", perms->problems);
  pthread_mutex_unlock(&perms->lock);

session:
  /* The handler's state is freed by its finalizer, once nothing can call it any more. */
  robota_session_free(s);
  /* Tool threads notice the cancellation within milliseconds; wait for them so every
   * completion is consumed before the next scenario (and before exit, for leak checkers). */
  for (int waited = 0; atomic_load(&live_threads) > 0 && waited < WAIT_MS; waited += 5) sleep_ms(5);
dirs:
  rmdir(cwd);
  rmdir(home);
  return result;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SCENARIO.json...\n", argv[0]);
    return 2;
  }
  static const char *const TOP_KEYS[] = {"name",    "description",        "provider",
                                         "host_tools", "permission_answers", "settings",
                                         "skills",  "commands",           "mcp_servers",
                                         "actions", "expected", "host_commands",
                                         "builtin_tools", "output_format",
                                         "max_structured_output_retries"};
  int print = getenv("CONFORMANCE_PRINT") != NULL;
  atomic_init(&live_threads, 0);
  robota_runtime *rt = NULL;
  robota_error *err = NULL;
  robota_status st = robota_runtime_new(2, &rt, &err);
  if (st != ROBOTA_STATUS_OK) die("robota_runtime_new", st, err);
  int failed = 0;
  for (int i = 1; i < argc; i++) {
    cJSON *scenario = read_json_file(argv[i]);
    if (scenario == NULL) {
      fprintf(stderr, "%s: not readable JSON\n", argv[i]);
      failed++;
      continue;
    }
    const char *name = str_of(scenario, "name");
    if (name == NULL ||
        !only_keys(scenario, TOP_KEYS, sizeof TOP_KEYS / sizeof TOP_KEYS[0], argv[i])) {
      fprintf(stderr, "%s: invalid scenario\n", argv[i]);
      failed++;
      cJSON_Delete(scenario);
      continue;
    }
    run_state r;
    r.name = name;
    r.problem[0] = '\0';
    cJSON *actual = play(scenario, rt, &r);
    const cJSON *expected = cJSON_GetObjectItemCaseSensitive(scenario, "expected");
    if (print && actual != NULL) {
      char *text = cJSON_Print(actual);
      printf("== %s\n%s\n", name, text);
      cJSON_free(text);
    }
    if (actual == NULL || r.problem[0] != '\0') {
      fprintf(stderr, "scenario `%s` (%s): %s\n", name, argv[i],
              r.problem[0] ? r.problem : "did not run");
      failed++;
    } else if (!cJSON_Compare(expected, actual, 1)) {
      char *want = cJSON_Print(expected);
      char *got = cJSON_Print(actual);
      fprintf(stderr, "scenario `%s` (%s) differs:\n--- expected\n%s\n+++ actual\n%s\n", name,
              argv[i], want, got);
      cJSON_free(want);
      cJSON_free(got);
      failed++;
    } else {
      printf("scenario %s: ok\n", name);
    }
    cJSON_Delete(actual);
    cJSON_Delete(scenario);
  }
  robota_runtime_shutdown(rt, 5000);
  if (failed) {
    fprintf(stderr, "%d of %d conformance scenarios failed\n", failed, argc - 1);
    return 1;
  }
  printf("conformance: all %d scenarios passed\n", argc - 1);
  return 0;
}
