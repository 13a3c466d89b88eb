/* common.h: helpers shared by the C tests (C11, -Wall -Wextra -Werror -pedantic). */
#ifndef ROBOTA_TEST_COMMON_H
#define ROBOTA_TEST_COMMON_H

#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "robota.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                              \
    }                                                                          \
  } while (0)

/* Checks a call's status; the call may use `e_` as its robota_error ** target. */
#define EXPECT_STATUS(expected, call)                                                  \
  do {                                                                                 \
    robota_error *e_ = NULL;                                                           \
    robota_status s_ = (call);                                                         \
    if (s_ != (expected)) {                                                            \
      fprintf(stderr, "%s:%d: %s returned %d (expected %d): %s\n", __FILE__, __LINE__, \
              #call, (int)s_, (int)(expected), robota_error_message(e_));              \
      failures++;                                                                      \
    } else if (s_ != ROBOTA_STATUS_OK && e_ != NULL && robota_error_code(e_) != s_) {  \
      fprintf(stderr, "%s:%d: error code %d differs from status %d\n", __FILE__,       \
              __LINE__, (int)robota_error_code(e_), (int)s_);                          \
      failures++;                                                                      \
    }                                                                                  \
    robota_error_free(e_);                                                             \
  } while (0)

static inline void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* Waits until *flag >= value, at most `ms` milliseconds; returns whether it got there. */
static inline int wait_for(atomic_int *flag, int value, long ms) {
  for (long waited = 0; waited < ms; waited += 5) {
    if (atomic_load(flag) >= value) return 1;
    sleep_ms(5);
  }
  return atomic_load(flag) >= value;
}

static inline void die(const char *what, robota_status status, robota_error *err) {
  fprintf(stderr, "%s failed (%d): %s\n", what, (int)status, robota_error_message(err));
  robota_error_free(err);
  exit(2);
}

static inline robota_provider *make_provider(robota_runtime *rt, const char *json) {
  robota_provider *p = NULL;
  robota_error *err = NULL;
  robota_status s = robota_provider_new_json(rt, json, strlen(json), &p, &err);
  if (s != ROBOTA_STATUS_OK) die("robota_provider_new_json", s, err);
  return p;
}

static inline robota_session_options *make_options(const char *json) {
  robota_session_options *o = NULL;
  robota_error *err = NULL;
  robota_status s = robota_session_options_new(json, strlen(json), &o, &err);
  if (s != ROBOTA_STATUS_OK) die("robota_session_options_new", s, err);
  return o;
}

static inline robota_session *make_session(robota_provider *p, robota_session_options *o) {
  robota_session *session = NULL;
  robota_error *err = NULL;
  robota_status s = robota_session_new(p, o, &session, &err);
  if (s != ROBOTA_STATUS_OK) die("robota_session_new", s, err);
  return session;
}

static inline void resolve_str(robota_completion *c, const char *json) {
  robota_error *err = NULL;
  robota_status s = robota_completion_resolve(c, json, strlen(json), &err);
  if (s != ROBOTA_STATUS_OK && s != ROBOTA_STATUS_CANCELLED) {
    fprintf(stderr, "resolve(%s) failed (%d): %s\n", json, (int)s, robota_error_message(err));
    failures++;
  }
  robota_error_free(err);
}

/* The session's messages as JSON (owned by the caller). */
static inline char *messages_of(robota_session *s) {
  char *json = NULL;
  robota_error *err = NULL;
  robota_status st = robota_session_get_messages(s, &json, &err);
  if (st != ROBOTA_STATUS_OK) die("robota_session_get_messages", st, err);
  return json;
}

static inline int contains(const char *haystack, const char *needle) {
  return haystack != NULL && strstr(haystack, needle) != NULL;
}

#endif
