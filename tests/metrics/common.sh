# shellcheck shell=bash
# Sourced by the metrics tests: start ebzipd on free ports and clean up.
# Needs: EBZIPD (the binary), WORK (a temporary directory).

PY=/usr/bin/python3   # Debian's python, which has grpcio (python3 on PATH may not)

# Background processes started here, stopped by stop_all (in reverse order).
PIDS=()

stop_all() {
  local i pid
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[i]}
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    # Give each up to 10 s to drain, then kill it.
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}

# The value of KEY in the first JSON log line of FILE holding it (waits up to
# 30 s for the line to appear).
log_field() {
  local file=$1 key=$2
  "$PY" - "$file" "$key" <<'PYEOF'
import json, sys, time
path, key = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    with open(path) as f:
        for line in f:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if key in event:
                print(event[key])
                sys.exit(0)
    time.sleep(0.1)
sys.exit(f"no {key!r} in {path} after 30 s")
PYEOF
}

# start_ebzipd [FLAGS...]: sets EBZIPD_PID, GRPC_PORT and METRICS_PORT. Both
# ports are chosen by the kernel (port 0) and read from the first log line.
start_ebzipd() {
  "$EBZIPD" --listen 127.0.0.1:0 --metrics_listen 127.0.0.1:0 --backend cpu "$@" \
      2> "$WORK/ebzipd.log" &
  EBZIPD_PID=$!
  PIDS+=("$EBZIPD_PID")
  if ! GRPC_PORT=$(log_field "$WORK/ebzipd.log" port) ||
     ! METRICS_PORT=$(log_field "$WORK/ebzipd.log" metrics_port); then
    echo "ebzipd did not start:" >&2
    cat "$WORK/ebzipd.log" >&2
    return 1
  fi
  echo "ebzipd pid $EBZIPD_PID: gRPC 127.0.0.1:$GRPC_PORT, metrics 127.0.0.1:$METRICS_PORT"
}

# stop_ebzipd: SIGTERM, and the exit status must be 0 (a clean drain) within
# the drain's 30 s grace and some: a server that hangs on its way out fails
# here, with its log, instead of at ctest's timeout with nothing said.
stop_ebzipd() {
  kill -TERM "$EBZIPD_PID"
  local rc=0 _
  for _ in $(seq 450); do kill -0 "$EBZIPD_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$EBZIPD_PID" 2>/dev/null; then
    echo "FAIL: ebzipd still running 45 s after SIGTERM; its log, then its threads:" >&2
    tail -20 "$WORK/ebzipd.log" >&2
    # Best effort (no gdb, no ptrace): the callers run under set -e.
    { gdb -p "$EBZIPD_PID" -batch -ex "thread apply all bt" 2>/dev/null |
        grep -E "^(Thread|#)" | head -150 >&2; } || true
    kill -KILL "$EBZIPD_PID" 2>/dev/null || true
    return 1
  fi
  wait "$EBZIPD_PID" || rc=$?
  local keep=()
  for pid in "${PIDS[@]}"; do [[ $pid == "$EBZIPD_PID" ]] || keep+=("$pid"); done
  PIDS=("${keep[@]}")
  if [[ $rc != 0 ]]; then
    echo "FAIL: ebzipd exited $rc after SIGTERM" >&2
    tail -20 "$WORK/ebzipd.log" >&2
    return 1
  fi
}

# A port nobody listens on now (for programs that cannot take port 0).
free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# make_requests OUT: tests/metrics/make_requests.py's requests to the
# started ebzipd, its accounting into OUT. Its calls have deadlines, but a
# client stuck elsewhere (channel, interpreter) would otherwise run into
# ctest's timeout with nothing said: after 120 s it fails here, with
# ebzipd's log.
make_requests() {
  local rc=0
  timeout -k 5 120 "$PY" "$(dirname "${BASH_SOURCE[0]}")/make_requests.py" \
      "127.0.0.1:$GRPC_PORT" --rounds 2 > "$1" || rc=$?
  if [[ $rc != 0 ]]; then
    echo "FAIL: make_requests.py exited $rc (124: still running after 120 s); ebzipd's log:" >&2
    tail -40 "$WORK/ebzipd.log" >&2
    return 1
  fi
}

http_get() {
  "$PY" -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$1"
}
