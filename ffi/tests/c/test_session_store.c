/* test_session_store.c: a session store written in C (cJSON trees behind a mutex) answering the
 * engine's store operations. It passes the engine's store conformance suite; one that forgets
 * snapshots fails it; a session saved in it over a scripted provider resumes in a new session
 * with its history and name, one writer at a time; a store is not a `persistence` option too.
 * Built with -std=c11 -Wall -Wextra -Werror -pedantic (and -lcjson) and run by
 * ffi/tests/c_abi.rs. Exits 0 when every check passes. */
#include "common.h"

#include <cjson/cJSON.h>
#include <pthread.h>

#define MAX_STORES 64

typedef struct {
  pthread_mutex_t lock;
  cJSON *stores[MAX_STORES]; /* {"snapshots": {id: {summary, snapshot}}, "logs": {id: [chunk]},
                                "leases": {id: lease}} */
  int forget_snapshots;
} host_store;

static cJSON *store_at(host_store *h, int index) {
  if (index < 0 || index >= MAX_STORES) return NULL;
  if (h->stores[index] == NULL) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "snapshots", cJSON_CreateObject());
    cJSON_AddItemToObject(root, "logs", cJSON_CreateObject());
    cJSON_AddItemToObject(root, "leases", cJSON_CreateObject());
    h->stores[index] = root;
  }
  return h->stores[index];
}

static double log_end(cJSON *chunks) {
  int n = cJSON_GetArraySize(chunks);
  if (n == 0) return 0;
  return cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(chunks, n - 1), "end"));
}

/* Answers one operation; returns the answer (owned) or NULL with *error set (static text). */
static cJSON *answer(host_store *h, cJSON *request, const char **error) {
  cJSON *index_item = cJSON_GetObjectItem(request, "store_index");
  cJSON *root = store_at(h, index_item != NULL ? (int)cJSON_GetNumberValue(index_item) : 0);
  const char *op = cJSON_GetStringValue(cJSON_GetObjectItem(request, "op"));
  const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(request, "session_id"));
  cJSON *snapshots = cJSON_GetObjectItem(root, "snapshots");
  cJSON *logs = cJSON_GetObjectItem(root, "logs");
  cJSON *leases = cJSON_GetObjectItem(root, "leases");
  if (op == NULL) {
    *error = "no op";
    return NULL;
  }
  if (strcmp(op, "put_snapshot") == 0) {
    if (h->forget_snapshots) return cJSON_CreateNull();
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddItemToObject(entry, "summary",
                          cJSON_Duplicate(cJSON_GetObjectItem(request, "summary"), 1));
    cJSON_AddItemToObject(entry, "snapshot",
                          cJSON_Duplicate(cJSON_GetObjectItem(request, "snapshot"), 1));
    cJSON_DeleteItemFromObjectCaseSensitive(snapshots, id);
    cJSON_AddItemToObject(snapshots, id, entry);
    return cJSON_CreateNull();
  }
  if (strcmp(op, "get_snapshot") == 0) {
    cJSON *entry = cJSON_GetObjectItem(snapshots, id);
    return entry ? cJSON_Duplicate(cJSON_GetObjectItem(entry, "snapshot"), 1) : cJSON_CreateNull();
  }
  if (strcmp(op, "list_snapshots") == 0) {
    cJSON *list = cJSON_CreateArray();
    cJSON *entry = NULL;
    cJSON_ArrayForEach(entry, snapshots) {
      cJSON_AddItemToArray(list, cJSON_Duplicate(cJSON_GetObjectItem(entry, "summary"), 1));
    }
    return list;
  }
  if (strcmp(op, "append_log") == 0) {
    cJSON *chunks = cJSON_GetObjectItem(logs, id);
    if (chunks == NULL) {
      chunks = cJSON_CreateArray();
      cJSON_AddItemToObject(logs, id, chunks);
    }
    if (log_end(chunks) != cJSON_GetNumberValue(cJSON_GetObjectItem(request, "start"))) {
      *error = "the log does not end at start: another writer appended";
      return NULL;
    }
    cJSON *chunk = cJSON_CreateObject();
    cJSON_AddNumberToObject(chunk, "start", cJSON_GetNumberValue(cJSON_GetObjectItem(request, "start")));
    cJSON_AddNumberToObject(chunk, "end", cJSON_GetNumberValue(cJSON_GetObjectItem(request, "end")));
    cJSON_AddItemToObject(chunk, "lines", cJSON_Duplicate(cJSON_GetObjectItem(request, "lines"), 1));
    cJSON_AddItemToArray(chunks, chunk);
    return cJSON_CreateNull();
  }
  if (strcmp(op, "read_log") == 0) {
    cJSON *chunks = cJSON_GetObjectItem(logs, id);
    return chunks ? cJSON_Duplicate(chunks, 1) : cJSON_CreateNull();
  }
  if (strcmp(op, "log_length") == 0) {
    cJSON *chunks = cJSON_GetObjectItem(logs, id);
    return chunks ? cJSON_CreateNumber(log_end(chunks)) : cJSON_CreateNull();
  }
  if (strcmp(op, "list_logs") == 0) {
    cJSON *list = cJSON_CreateArray();
    cJSON *entry = NULL;
    cJSON_ArrayForEach(entry, logs) { cJSON_AddItemToArray(list, cJSON_CreateString(entry->string)); }
    return list;
  }
  if (strcmp(op, "delete_session") == 0) {
    int found = cJSON_HasObjectItem(snapshots, id) || cJSON_HasObjectItem(logs, id);
    cJSON_DeleteItemFromObject(snapshots, id);
    cJSON_DeleteItemFromObject(logs, id);
    cJSON_DeleteItemFromObject(leases, id);
    return cJSON_CreateBool(found);
  }
  if (strcmp(op, "acquire_lease") == 0) {
    cJSON *held = cJSON_GetObjectItem(leases, id);
    const char *replace = cJSON_GetStringValue(cJSON_GetObjectItem(request, "replace_token"));
    if (held != NULL) {
      const char *token = cJSON_GetStringValue(cJSON_GetObjectItem(held, "token"));
      if (replace == NULL || token == NULL || strcmp(replace, token) != 0) return cJSON_Duplicate(held, 1);
      cJSON_DeleteItemFromObject(leases, id);
    }
    cJSON_AddItemToObject(leases, id, cJSON_Duplicate(cJSON_GetObjectItem(request, "lease"), 1));
    return cJSON_CreateNull();
  }
  if (strcmp(op, "release_lease") == 0) {
    cJSON *held = cJSON_GetObjectItem(leases, id);
    const char *token = cJSON_GetStringValue(cJSON_GetObjectItem(request, "token"));
    const char *mine = held ? cJSON_GetStringValue(cJSON_GetObjectItem(held, "token")) : NULL;
    if (mine != NULL && token != NULL && strcmp(mine, token) == 0) cJSON_DeleteItemFromObject(leases, id);
    return cJSON_CreateNull();
  }
  *error = "unknown op";
  return NULL;
}

static void on_store(void *user_data, const char *json, size_t len, robota_completion *completion) {
  host_store *h = user_data;
  cJSON *request = cJSON_ParseWithLength(json, len);
  const char *error = "the request is not JSON";
  cJSON *reply = NULL;
  pthread_mutex_lock(&h->lock);
  if (request != NULL) reply = answer(h, request, &error);
  pthread_mutex_unlock(&h->lock);
  cJSON_Delete(request);
  if (reply == NULL) {
    robota_completion_reject(completion, error, strlen(error), NULL);
    return;
  }
  char *text = cJSON_PrintUnformatted(reply);
  cJSON_Delete(reply);
  resolve_str(completion, text);
  cJSON_free(text);
}

static void store_init(host_store *h) {
  memset(h, 0, sizeof *h);
  pthread_mutex_init(&h->lock, NULL);
}

static void store_free(host_store *h) {
  for (int i = 0; i < MAX_STORES; i++) {
    cJSON_Delete(h->stores[i]);
    h->stores[i] = NULL;
  }
  pthread_mutex_destroy(&h->lock);
}

static int count(const char *haystack, const char *needle) {
  int n = 0;
  for (const char *at = haystack; at != NULL && (at = strstr(at, needle)) != NULL; at++) n++;
  return n;
}

static robota_session *store_session(robota_provider *p, const char *json, host_store *h,
                                     robota_status expected) {
  robota_session_options *o = make_options(json);
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_session_options_set_session_store(o, on_store, h, NULL, &e_));
  robota_session *s = NULL;
  EXPECT_STATUS(expected, robota_session_new(p, o, &s, &e_));
  robota_session_options_free(o);
  return s;
}

int main(void) {
  /* The conformance suite: every check passes. */
  host_store good;
  store_init(&good);
  char *json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_run_store_conformance(on_store, &good, NULL, &json, &e_));
  CHECK(count(json, "\"passed\":true") == 9);
  CHECK(!contains(json, "\"passed\":false"));
  if (contains(json, "\"passed\":false")) fprintf(stderr, "conformance: %s\n", json);
  robota_string_free(json);
  store_free(&good);

  /* A store that forgets snapshots fails it, saying what differed. */
  host_store forgetful;
  store_init(&forgetful);
  forgetful.forget_snapshots = 1;
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK,
                robota_run_store_conformance(on_store, &forgetful, NULL, &json, &e_));
  CHECK(contains(json, "\"passed\":false"));
  CHECK(contains(json, "round trip"));
  robota_string_free(json);
  store_free(&forgetful);
  json = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_NULL_ARGUMENT,
                robota_run_store_conformance(NULL, NULL, NULL, &json, &e_));

  /* A session saved in the store resumes with its history and name, one writer at a time. */
  const char *dir = getenv("ROBOTA_TEST_DIR");
  if (dir == NULL) {
    fprintf(stderr, "test_session_store: ROBOTA_TEST_DIR must be set\n");
    return 2;
  }
  host_store store;
  store_init(&store);
  robota_provider *p = make_provider(
      NULL, "{\"type\": \"scripted\", \"turns\": [{\"text\": \"Noted.\"}, {\"text\": \"42.\"}]}");
  char options[512];
  snprintf(options, sizeof options,
           "{\"cwd\": \"%s\", \"home\": \"%s\", \"load_project_context\": false,"
           " \"builtin_tools\": false}",
           dir, dir);
  robota_session *first = store_session(p, options, &store, ROBOTA_STATUS_OK);
  if (first == NULL) return 1;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(first, "Remember 42", 11, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(first, 10000, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_set_name(first, "memory", 6, &e_));
  char *id = NULL;
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_id(first, &id, &e_));
  char resume[1024];
  snprintf(resume, sizeof resume,
           "{\"cwd\": \"%s\", \"home\": \"%s\", \"load_project_context\": false,"
           " \"builtin_tools\": false, \"resume_session_id\": \"%s\"}",
           dir, dir, id ? id : "");
  robota_session *second = store_session(p, resume, &store, ROBOTA_STATUS_SESSION_LOCKED);
  CHECK(second == NULL);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_shutdown(first, 10000, &e_));
  robota_session_free(first);

  pthread_mutex_lock(&store.lock);
  char *saved = cJSON_PrintUnformatted(store.stores[0]);
  pthread_mutex_unlock(&store.lock);
  CHECK(contains(saved, "\"leases\":{}"));
  CHECK(contains(saved, "Remember 42"));
  cJSON_free(saved);

  robota_session *resumed = store_session(p, resume, &store, ROBOTA_STATUS_OK);
  if (resumed != NULL) {
    char *messages = messages_of(resumed);
    CHECK(contains(messages, "Remember 42") && contains(messages, "Noted."));
    robota_string_free(messages);
    char *name = NULL;
    EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_get_name(resumed, &name, &e_));
    CHECK(name != NULL && strcmp(name, "memory") == 0);
    robota_string_free(name);
    EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_shutdown(resumed, 10000, &e_));
    robota_session_free(resumed);
  }
  robota_string_free(id);

  /* A store and `persistence` together: refused. */
  robota_session *both = store_session(
      p, "{\"persistence\": \"project\", \"load_project_context\": false}", &store,
      ROBOTA_STATUS_INVALID_ARGUMENT);
  CHECK(both == NULL);
  robota_provider_free(p);
  store_free(&store);

  if (failures == 0) printf("all checks passed\n");
  return failures == 0 ? 0 : 1;
}
