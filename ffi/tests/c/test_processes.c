/* test_processes.c: the processes a session starts end with it, checked by pid from C.
 * A Bash call (scripted provider) starts a process tree — a subshell with two sleepers and a
 * sleeper backgrounded with `&` — in a temporary directory; the pids are read from files the
 * tree writes. Built with -std=c11 -Wall -Wextra -Werror -pedantic and run by
 * ffi/tests/c_abi.rs. Exits 0 when every check passes; prints each failure. */
#include "common.h"

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#define TREE                                                                            \
  "( sleep 300 & echo $! > gc1.pid; sleep 300 & echo $! > gc2.pid; wait ) & "           \
  "sleep 300 & echo $! > amp.pid; echo $$ > shell.pid; wait"

static const char *PID_FILES[] = {"shell.pid", "gc1.pid", "gc2.pid", "amp.pid"};
#define NPIDS 4

/* 1 while `pid` runs (a zombie has exited: it counts as dead). */
static int alive(pid_t pid) {
  if (kill(pid, 0) != 0) return 0;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  char buf[512];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *close = strrchr(buf, ')');
  if (close == NULL || close[1] == '\0' || close[2] == '\0') return 0;
  return close[2] != 'Z' && close[2] != 'X';
}

/* The pid in dir/name, waiting up to 10 s for the file; 0 when it never appears. */
static pid_t read_pid(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  for (int waited = 0; waited < 10000; waited += 20) {
    FILE *f = fopen(path, "r");
    if (f != NULL) {
      int pid = 0;
      int got = fscanf(f, "%d", &pid);
      fclose(f);
      if (got == 1 && pid > 1) return (pid_t)pid;
    }
    sleep_ms(20);
  }
  fprintf(stderr, "%s never written\n", path);
  return 0;
}

static void read_tree(const char *dir, pid_t pids[NPIDS]) {
  for (int i = 0; i < NPIDS; i++) {
    pids[i] = read_pid(dir, PID_FILES[i]);
    CHECK(pids[i] > 0 && alive(pids[i]));
  }
}

static void check_dead(const pid_t pids[NPIDS], const char *when) {
  for (int i = 0; i < NPIDS; i++) {
    if (pids[i] > 0 && alive(pids[i])) {
      fprintf(stderr, "process %d (%s) survived %s\n", (int)pids[i], PID_FILES[i], when);
      failures++;
    }
  }
}

/* A session in a fresh temporary directory (written to `dir`) whose provider makes one Bash
 * call with `input` (a JSON object) and then answers. */
static robota_session *tree_session(char dir[64], const char *input) {
  strcpy(dir, "/tmp/robota-c-processes-XXXXXX");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    exit(2);
  }
  char provider[1024];
  snprintf(provider, sizeof provider,
           "{\"type\":\"scripted\",\"turns\":[{\"tool_calls\":[{\"id\":\"t1\",\"name\":\"Bash\","
           "\"input\":%s}]},{\"text\":\"done\"}]}",
           input);
  robota_provider *p = make_provider(NULL, provider);
  char options[512];
  snprintf(options, sizeof options,
           "{\"cwd\":\"%s\",\"system_prompt\":\"test\",\"load_project_context\":false,"
           "\"permission_mode\":\"bypassPermissions\",\"sandbox\":false}",
           dir);
  robota_session *s = NULL;
  robota_error *err = NULL;
  robota_status st = robota_session_new_json(p, options, strlen(options), &s, &err);
  robota_provider_free(p);
  if (st != ROBOTA_STATUS_OK) die("robota_session_new_json", st, err);
  return s;
}

static void remove_dir(const char *dir) {
  char command[128];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  CHECK(system(command) == 0);
}

static const char *FOREGROUND = "{\"command\":\"" TREE "\"}";
static const char *BACKGROUND = "{\"command\":\"" TREE "\",\"run_in_background\":true}";

/* Freeing a session in the middle of a Bash call stops the call's whole tree. */
static void test_free_stops_the_running_call(void) {
  char dir[64];
  robota_session *s = tree_session(dir, FOREGROUND);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "go", 2, &e_));
  pid_t pids[NPIDS];
  read_tree(dir, pids);
  robota_session_free(s);
  check_dead(pids, "robota_session_free during the call");
  remove_dir(dir);
}

/* A session whose turn started the tree as a background task, which outlives the turn. */
static robota_session *background_tree(char dir[64], pid_t pids[NPIDS]) {
  robota_session *s = tree_session(dir, BACKGROUND);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_submit(s, "go", 2, &e_));
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_wait_idle(s, 10000, &e_));
  read_tree(dir, pids);
  return s;
}

/* robota_session_free stops background tasks. */
static void test_free_stops_background_tasks(void) {
  char dir[64];
  pid_t pids[NPIDS];
  robota_session *s = background_tree(dir, pids);
  robota_session_free(s);
  check_dead(pids, "robota_session_free");
  remove_dir(dir);
}

/* robota_session_shutdown stops them too (the handle stays valid until freed). */
static void test_shutdown_stops_background_tasks(void) {
  char dir[64];
  pid_t pids[NPIDS];
  robota_session *s = background_tree(dir, pids);
  EXPECT_STATUS(ROBOTA_STATUS_OK, robota_session_shutdown(s, 10000, &e_));
  check_dead(pids, "robota_session_shutdown");
  robota_session_free(s);
  remove_dir(dir);
}

int main(void) {
  test_free_stops_the_running_call();
  test_free_stops_background_tasks();
  test_shutdown_stops_background_tasks();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("test_processes: all checks passed\n");
  return 0;
}
