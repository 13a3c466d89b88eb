#!/usr/bin/env bash
# ffi/benches/run.sh: the C ABI benchmarks behind BENCHMARKS.md (event delivery to a C callback; cold start).
#
# Usage: ffi/benches/run.sh [all|events|cold-start] [event_throughput options...]
#   events      ffi/benches/event_throughput.c: events/s and latency to a robota_session_subscribe
#               callback (options: --deltas-per-turn K --turns T --sessions S --burst N --runs R)
#   cold-start  process start -> result of examples/c/query (scripted, and against mock-llm) and
#               examples/c/quickstart, next to `true`; hyperfine when installed (apt-get install -y
#               hyperfine), else a shell loop
#
# Builds the RELEASE librobota (cargo build --release -p robota-ffi; for cold-start also the release
# mock-llm) in $CARGO_TARGET_DIR (default target/) and compiles the C programs with -O2 into a
# temporary directory. Not run in CI: it prints figures and asserts nothing about time (it fails
# only if events are lost or a program does not give its result).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
# A relative CARGO_TARGET_DIR means the caller's directory; cargo runs from the root below.
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
export CARGO_TARGET_DIR="$target_dir"
cd "$root"

what="${1:-all}"
case "$what" in
  all|events|cold-start) if [ $# -gt 0 ]; then shift; fi ;;
  -*) what="all" ;;
  *) echo "usage: $0 [all|events|cold-start] [event_throughput options...]" >&2; exit 2 ;;
esac

cargo build --release -p robota-ffi --lib --locked
lib_dir="$target_dir/release"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cc_release() { # cc_release SOURCE OUTPUT [extra flags]
  local source="$1" out="$2"
  shift 2
  "${CC:-cc}" -std=c11 -O2 -Wall -Wextra -Werror -pedantic -I "$root/include" "$source" \
    -pthread -L "$lib_dir" -lrobota -Wl,-rpath,"$lib_dir" -o "$out" "$@"
}

echo "machine: $(nproc) cores, $(uname -sr), $("${CC:-cc}" --version | head -n 1)"
# Other work on the machine shows up in the tails: say how busy it was.
if [ -r /proc/loadavg ]; then echo "load average before: $(cut -d ' ' -f 1-3 /proc/loadavg)"; fi

if [ "$what" = all ] || [ "$what" = events ]; then
  echo
  echo "=== event delivery to a C callback (ffi/benches/event_throughput.c) ==="
  cc_release ffi/benches/event_throughput.c "$work/event_throughput"
  # An empty working directory: the sessions find no project settings or context there.
  mkdir -p "$work/cwd"
  (cd "$work/cwd" && "$work/event_throughput" "$@")
fi

if [ "$what" = all ] || [ "$what" = cold-start ]; then
  echo
  echo "=== cold start: process start -> result (examples/c/query.c, examples/c/quickstart.c) ==="
  for example in query quickstart; do
    cc_release "examples/c/$example.c" "$work/$example"
  done
  # query against mock-llm (release build, on loopback) instead of the in-process scripted provider.
  cargo build --release -p mock-llm --bin mock-llm --locked
  printf '%s\n' '{"repeat": true, "turns": [{"text": ["robota is ", "an embeddable agent engine (mock-llm)."]}]}' \
    > "$work/script.json"
  "$target_dir/release/mock-llm" --script "$work/script.json" --no-exit-on-stdin-eof \
    > "$work/mock.out" 2> "$work/mock.err" < /dev/null &
  mock_pid=$!
  trap 'kill "$mock_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
  for _ in $(seq 200); do [ -s "$work/mock.out" ] && break; sleep 0.05; done
  base_url="$(sed -n 's/.*"base_url": *"\([^"]*\)".*/\1/p' "$work/mock.out")"
  if [ -z "$base_url" ]; then
    echo "mock-llm did not start:" >&2
    cat "$work/mock.err" >&2
    exit 1
  fi
  mkdir -p "$work/cwd"
  cd "$work/cwd"
  # Each program must succeed before it is timed.
  "$work/query" | grep -q 'embeddable agent engine'
  ROBOTA_BASE_URL="$base_url" "$work/query" | grep -q 'agent engine (mock-llm)'
  "$work/quickstart" >/dev/null
  true_bin="$(command -v true)"
  if command -v hyperfine >/dev/null 2>&1; then
    hyperfine -N --warmup 20 --runs 300 \
      -n true "$true_bin" \
      -n "query (scripted)" "$work/query" \
      -n "quickstart (scripted)" "$work/quickstart"
    ROBOTA_BASE_URL="$base_url" hyperfine -N --warmup 20 --runs 300 \
      -n "query (mock-llm over loopback)" "$work/query"
  else
    echo "(hyperfine not installed: mean of 300 runs of a shell loop, loop overhead included)"
    time_loop() { # time_loop LABEL COMMAND...
      local label="$1" start end
      shift
      start="$(date +%s%N)"
      for _ in $(seq 300); do "$@" >/dev/null; done
      end="$(date +%s%N)"
      printf '%s: %s us per run\n' "$label" "$(( (end - start) / 300000 ))"
    }
    time_loop true "$true_bin"
    time_loop "query (scripted)" "$work/query"
    time_loop "quickstart (scripted)" "$work/quickstart"
    time_loop "query (mock-llm over loopback)" env ROBOTA_BASE_URL="$base_url" "$work/query"
  fi
fi
