/* event_throughput.c: benchmark of event delivery to a C callback (DESIGN §9: >= 1M events/s, p99 < 1 ms).
 *
 * Built with -O2 against a release librobota and run by ffi/benches/run.sh; prints figures, asserts
 * nothing about time. Everything goes through the public C API (robota.h) with the scripted
 * provider and the library's default runtime.
 *
 * Two workloads:
 *
 * 1. "turns": S sessions, one after the other, each with a scripted provider of T turns of K text
 *    deltas (each delta the one character "~"). The first prompt is submitted from main; every
 *    later one from inside the callback that receives the previous prompt's `complete`, so the
 *    engine is never idle waiting for the host. K defaults to 200, below the subscriber queue
 *    bound (256), so nothing needs to be coalesced unless the host falls behind.
 *    - throughput: callbacks (all kinds) / time from the first submit to the last `complete` of
 *      each session, summed over sessions (also given including session creation);
 *    - latency: the C side cannot see when the engine emitted an event (events carry no
 *      timestamp). The scripted provider emits all K deltas of a turn in one burst right after the
 *      turn starts, so every event of a prompt was emitted after that prompt's submit. For every
 *      event we record (arrival in the callback) - (submit of its prompt): an UPPER BOUND on its
 *      delivery latency. It includes the engine's work to start the turn and the time to deliver
 *      the events queued before it in the same burst (which is real queueing latency);
 *    - gap: time between consecutive text_delta callbacks of one turn: the per-event cost of the
 *      delivery path while it is busy (1 / gap is the rate the callback is fed at).
 *
 * 2. "burst": one prompt whose single turn streams N deltas (default 1,000,000) without the
 *    provider ever yielding: the stress case. The subscriber queue fills and the engine coalesces
 *    text_delta events into the last queued one, so we report deltas emitted vs text_delta
 *    callbacks delivered (and check that every "~" arrived).
 *
 * Usage: event_throughput [--deltas-per-turn K] [--turns T] [--sessions S] [--burst N] [--runs R]
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "robota.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, robota_status status, robota_error *err) {
  fprintf(stderr, "%s failed (%d): %s\n", what, (int)status, robota_error_message(err));
  robota_error_free(err);
  exit(1);
}

#define CALL(what, call)                        \
  do {                                          \
    robota_error *err_ = NULL;                  \
    robota_status st_ = (call);                 \
    if (st_ != ROBOTA_STATUS_OK) die(what, st_, err_); \
  } while (0)

/* State shared between main and the callback (which runs on an engine thread, one call at a time). */
typedef struct {
  robota_session *session;
  int turns_left;         /* prompts still to submit after the running one */
  uint64_t submit_ns;     /* when the running prompt was submitted */
  int first_pending;      /* no callback yet for the running prompt */
  uint64_t last_delta_ns; /* previous text_delta arrival in this turn (0: none yet) */
  uint64_t end_ns;        /* arrival of the last `complete` */
  /* counters */
  uint64_t events, deltas_delivered, tildes, failures;
  /* samples */
  uint64_t *lat, *gap, *first;
  size_t nlat, ngap, nfirst, cap;
  /* main waits on this until the session's last prompt completed */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
} bench;

static const char PROMPT[] = "go";

static int kind_is(const robota_event *ev, const char *kind) {
  size_t n = strlen(kind);
  return ev->kind_len == n && memcmp(ev->kind, kind, n) == 0;
}

static void on_event(void *user_data, const robota_event *ev) {
  bench *b = (bench *)user_data;
  uint64_t t = now_ns();
  b->events++;
  if (b->nlat < b->cap) b->lat[b->nlat++] = t - b->submit_ns;
  if (b->first_pending) {
    b->first_pending = 0;
    if (b->nfirst < b->cap) b->first[b->nfirst++] = t - b->submit_ns;
  }
  if (kind_is(ev, "text_delta")) {
    b->deltas_delivered++;
    for (size_t i = 0; i < ev->json_len; i++) b->tildes += ev->json[i] == '~';
    if (b->last_delta_ns != 0 && b->ngap < b->cap) b->gap[b->ngap++] = t - b->last_delta_ns;
    b->last_delta_ns = t;
    return;
  }
  int complete = kind_is(ev, "complete");
  if (!complete && !kind_is(ev, "error") && !kind_is(ev, "interrupted")) return;
  if (!complete) {
    b->failures++;
    fprintf(stderr, "prompt ended with %.*s: %.*s\n", (int)ev->kind_len, ev->kind,
            (int)(ev->json_len > 400 ? 400 : ev->json_len), ev->json);
  }
  b->last_delta_ns = 0;
  if (complete && b->turns_left > 0) {
    b->turns_left--;
    b->submit_ns = now_ns();
    b->first_pending = 1;
    CALL("robota_session_submit (from the callback)",
         robota_session_submit(b->session, PROMPT, sizeof PROMPT - 1, &err_));
    return;
  }
  b->end_ns = t;
  pthread_mutex_lock(&b->mu);
  b->done = 1;
  pthread_cond_signal(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

/* {"type":"scripted","turns":[{"text":["~",...k]}, ...turns]} */
static char *scripted_json(long turns, long k, size_t *len) {
  size_t cap = 64 + (size_t)turns * (16 + (size_t)k * 4);
  char *s = malloc(cap), *p = s;
  if (!s) { perror("malloc"); exit(1); }
  p += sprintf(p, "{\"type\":\"scripted\",\"turns\":[");
  for (long t = 0; t < turns; t++) {
    p += sprintf(p, "%s{\"text\":[", t ? "," : "");
    for (long i = 0; i < k; i++) {
      memcpy(p, i ? ",\"~\"" : "\"~\"", i ? 4 : 3);
      p += i ? 4 : 3;
    }
    p += sprintf(p, "]}");
  }
  p += sprintf(p, "]}");
  *len = (size_t)(p - s);
  return s;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Sorts v and prints its p50/p99/p99.9/max in microseconds. */
static void print_pct(const char *label, uint64_t *v, size_t n) {
  if (n == 0) { printf("  %s: no samples\n", label); return; }
  qsort(v, n, sizeof *v, cmp_u64);
#define PCT(p) ((double)v[(size_t)((double)(n - 1) * (p))] / 1000.0)
  printf("  %s: p50 %.2f us, p99 %.2f us, p99.9 %.2f us, max %.2f us (%zu samples)\n", label,
         PCT(0.50), PCT(0.99), PCT(0.999), (double)v[n - 1] / 1000.0, n);
#undef PCT
}

static const char SESSION_OPTIONS[] =
    "{\"system_prompt\":\"bench\",\"load_project_context\":false,\"builtin_tools\":false,"
    "\"auto_compact\":false}";

/* Runs one session of `turns` prompts of `k` deltas each; adds to b's counters; returns the
 * streaming time (first submit -> last complete) and adds the setup time to *setup_ns. */
static uint64_t run_session(bench *b, long turns, long k, uint64_t *setup_ns) {
  uint64_t t0 = now_ns();
  size_t len = 0;
  char *json = scripted_json(turns, k, &len);
  robota_provider *provider = NULL;
  CALL("robota_provider_new_json", robota_provider_new_json(NULL, json, len, &provider, &err_));
  free(json);
  CALL("robota_session_new_json", robota_session_new_json(provider, SESSION_OPTIONS,
                                                          sizeof SESSION_OPTIONS - 1,
                                                          &b->session, &err_));
  robota_provider_free(provider);
  uint64_t sub = 0;
  CALL("robota_session_subscribe",
       robota_session_subscribe(b->session, on_event, b, NULL, &sub, &err_));
  b->turns_left = (int)turns - 1;
  b->done = 0;
  b->last_delta_ns = 0;
  uint64_t start = now_ns();
  *setup_ns += start - t0;
  b->submit_ns = start;
  b->first_pending = 1;
  CALL("robota_session_submit", robota_session_submit(b->session, PROMPT, sizeof PROMPT - 1, &err_));
  pthread_mutex_lock(&b->mu);
  while (!b->done) pthread_cond_wait(&b->cv, &b->mu);
  pthread_mutex_unlock(&b->mu);
  uint64_t streaming = b->end_ns - start;
  uint64_t t1 = now_ns();
  CALL("robota_session_wait_idle", robota_session_wait_idle(b->session, 60000, &err_));
  CALL("robota_session_unsubscribe", robota_session_unsubscribe(b->session, sub, &err_));
  robota_session_free(b->session);
  b->session = NULL;
  *setup_ns += now_ns() - t1;
  return streaming;
}

static void reset(bench *b) {
  b->events = b->deltas_delivered = b->tildes = b->failures = 0;
  b->nlat = b->ngap = b->nfirst = 0;
}

static long arg_long(int argc, char **argv, const char *name, long dflt) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return strtol(argv[i + 1], NULL, 10);
  return dflt;
}

int main(int argc, char **argv) {
  long k = arg_long(argc, argv, "--deltas-per-turn", 200);
  long turns = arg_long(argc, argv, "--turns", 10);
  long sessions = arg_long(argc, argv, "--sessions", 500);
  long burst = arg_long(argc, argv, "--burst", 1000000);
  long runs = arg_long(argc, argv, "--runs", 3);
  if (k < 1 || turns < 1 || sessions < 1 || burst < 0 || runs < 1) {
    fprintf(stderr, "usage: %s [--deltas-per-turn K] [--turns T] [--sessions S] [--burst N] [--runs R]\n",
            argv[0]);
    return 2;
  }

  bench b;
  memset(&b, 0, sizeof b);
  pthread_mutex_init(&b.mu, NULL);
  pthread_cond_init(&b.cv, NULL);
  long emitted = k * turns * sessions;
  b.cap = (size_t)(emitted + turns * sessions * 16 + 1024);
  if ((size_t)burst + 1024 > b.cap) b.cap = (size_t)burst + 1024;
  b.lat = malloc(b.cap * sizeof *b.lat);
  b.gap = malloc(b.cap * sizeof *b.gap);
  b.first = malloc(b.cap * sizeof *b.first);
  if (!b.lat || !b.gap || !b.first) { perror("malloc"); return 1; }

  printf("robota %s, event delivery to a C callback (default runtime)\n", robota_version());

  /* Warm-up: one small session (page faults, runtime threads, allocator). */
  uint64_t setup = 0;
  run_session(&b, 10, k, &setup);

  int failed = 0;
  for (long r = 1; r <= runs; r++) {
    reset(&b);
    setup = 0;
    uint64_t streaming = 0;
    for (long s = 0; s < sessions; s++) streaming += run_session(&b, turns, k, &setup);
    double secs = (double)streaming / 1e9;
    printf("turns run %ld: %ld sessions x %ld prompts x %ld deltas = %ld deltas emitted\n", r,
           sessions, turns, k, emitted);
    printf("  delivered: %llu events, of which %llu text_delta carrying %llu deltas (%s)\n",
           (unsigned long long)b.events, (unsigned long long)b.deltas_delivered,
           (unsigned long long)b.tildes,
           b.deltas_delivered == (uint64_t)emitted ? "none coalesced" : "some coalesced");
    printf("  throughput: %.0f events/s (%.0f deltas/s) over %.1f ms streaming; %.0f events/s "
           "counting %.1f ms of session setup/teardown\n",
           (double)b.events / secs, (double)b.tildes / secs, secs * 1e3,
           (double)b.events / (secs + (double)setup / 1e9), (double)setup / 1e6);
    print_pct("latency bound (callback - submit of its prompt)", b.lat, b.nlat);
    print_pct("submit -> first callback of the prompt", b.first, b.nfirst);
    print_pct("gap between text_delta callbacks of a turn", b.gap, b.ngap);
    if (b.tildes != (uint64_t)emitted || b.failures) failed = 1;
  }

  for (long r = 1; burst > 0 && r <= runs; r++) {
    reset(&b);
    setup = 0;
    uint64_t streaming = run_session(&b, 1, burst, &setup);
    double secs = (double)streaming / 1e9;
    printf("burst run %ld: 1 prompt, 1 turn of %ld deltas, the provider never yields\n", r, burst);
    printf("  delivered: %llu events, of which %llu text_delta carrying %llu deltas (%llu coalesced away)\n",
           (unsigned long long)b.events, (unsigned long long)b.deltas_delivered,
           (unsigned long long)b.tildes,
           (unsigned long long)((uint64_t)burst - (b.deltas_delivered < (uint64_t)burst
                                                       ? b.deltas_delivered
                                                       : (uint64_t)burst)));
    printf("  submit -> complete: %.1f ms (%.0f deltas/s through the engine, %.0f callbacks/s)\n",
           secs * 1e3, (double)b.tildes / secs, (double)b.events / secs);
    print_pct("latency bound (callback - submit)", b.lat, b.nlat);
    if (b.tildes != (uint64_t)burst || b.failures) failed = 1;
  }

  free(b.lat);
  free(b.gap);
  free(b.first);
  if (failed) {
    fprintf(stderr, "FAILED: text lost or a prompt did not complete\n");
    return 1;
  }
  return 0;
}
