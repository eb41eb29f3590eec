#!/bin/bash
# Service load benchmark: ebzipd under ebzip_load, with batching on and off.
#
# usage: bench/service_bench.sh [BUILD_DIR]        (default: build/)
#
# For --batching=true and then --batching=false it starts ebzipd on free
# loopback ports, runs these workloads with ebzip_load (--method both: each
# request compresses a generated smooth float32 field, then decompresses the
# archive it got back) and prints ebzip_load's tables, plus the batches the
# server ran (from its /metrics) and the CPU time ebzipd and ebzip_load spent
# per request:
#   big    BIG_REQUESTS arrays of BIG_BYTES from BIG_STREAMS streams   (3 x 1 GiB, 1)
#   mid    MID_REQUESTS arrays of MID_BYTES from MID_STREAMS streams   (8 x 256 MiB, 4)
#   small  SMALL_REQUESTS arrays of SMALL_BYTES from SMALL_STREAMS     (10000 x 256 KiB, 32)
# The defaults suit a small CPU machine; on a GPU host use e.g.
#   BIG_REQUESTS=16 BIG_STREAMS=2 MID_REQUESTS=64 SMALL_REQUESTS=50000
#
# Environment:
#   EBZIP_BACKEND   ebzipd --backend (auto, cpu, gpu; default auto)
#   EBZIP_RUN       launcher prefix: binaries run as "$EBZIP_RUN ebzipd ARGS" and
#                   "$EBZIP_RUN ebzip_load ARGS" (e.g. a ../shared/tools/bundle
#                   directory's "bundle/run"); unset: BUILD_DIR/server/ebzipd and
#                   BUILD_DIR/bench/ebzip_load
#   METHOD          ebzip_load --method (default both)
#   REL             relative error bound (default 1e-4)
#   WORKLOADS       which to run, in order (default "big mid small")
#   BATCHING        which settings (default "true false")
#   EBZIPD_FLAGS    more ebzipd flags;  LOAD_FLAGS  more ebzip_load flags
#   SMALL_WARMUP    warm-up requests before the small workload (default 200)
#   SERVER_CPUS, LOAD_CPUS  taskset -c lists that keep ebzipd and ebzip_load on
#                   cores of their own (e.g. 0-9 and 10-15): with both on one
#                   host, what the server does with the cores it would have
#                   alone, the client being on another host in deployment
#                   (gRPC sizes its thread pools by the cores it may use)
# Needs python3 (standard library only) to read ports and metrics.
set -euo pipefail
build=${1:-build}
backend=${EBZIP_BACKEND:-auto}
method=${METHOD:-both}
rel=${REL:-1e-4}
workloads=${WORKLOADS:-big mid small}
batchings=${BATCHING:-true false}
read -r -a extra_server <<< "${EBZIPD_FLAGS:-}"
read -r -a extra_load <<< "${LOAD_FLAGS:-}"

# shellcheck source=bench/binaries.sh
source "$(dirname "$0")/binaries.sh"
find_binaries "$build"
if [[ -n ${SERVER_CPUS:-} ]]; then ebzipd=(taskset -c "$SERVER_CPUS" "${ebzipd[@]}"); fi
if [[ -n ${LOAD_CPUS:-} ]]; then load=(taskset -c "$LOAD_CPUS" "${load[@]}"); fi
PY=$(command -v python3)

work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log_field() {  # FILE KEY: from ebzipd's first JSON log line (waits up to 60 s)
  "$PY" - "$1" "$2" <<'PYEOF'
import json, sys, time
path, key = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    for line in open(path):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if key in event:
            print(event[key]); sys.exit(0)
    time.sleep(0.1)
sys.exit(f"no {key!r} in {path}")
PYEOF
}

# CPU seconds (user + system) used so far: ebzipd's from /proc; the
# shell's waited-for children's (ebzip_load's) from a file `times` wrote (in
# this shell: a subshell has children of its own).
server_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$1/stat"; }
children_cpu() {
  tail -1 "$1" | awk '{
    t = 0
    for (i = 1; i <= 2; ++i) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] }
    printf "%.3f", t }'
}

# METRICS_PORT SERVER_CPU_S LOAD_CPU_S: the batches the server ran since the
# last call, and the CPU time each process spent per request: with the
# client on the same host, the figure that moves least from run to run.
batch_summary() {
  "$PY" - "http://127.0.0.1:$1/metrics" "$work/batches.prev" "$2" "$3" <<'PYEOF'
import json, os, re, sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
def total(name):
    return sum(float(m.group(1)) for m in re.finditer(
        r'^' + name + r'(?:\{[^}]*\})? (\S+)$', text, re.M))
now = [total("ebzip_batch_requests_count"), total("ebzip_batch_requests_sum"),
       total("ebzip_device_busy_seconds_total")]
prev = json.load(open(sys.argv[2])) if os.path.exists(sys.argv[2]) else [0, 0, 0]
json.dump(now, open(sys.argv[2], "w"))
batches, requests, busy = (a - b for a, b in zip(now, prev))
print(f"server: {batches:.0f} batches ran {requests:.0f} requests "
      f"({requests / batches if batches else 0:.2f} per batch), device busy {busy:.2f} s")
server_cpu, load_cpu = float(sys.argv[3]), float(sys.argv[4])
if requests:
    print(f"cpu: ebzipd {server_cpu:.2f} s ({server_cpu / requests * 1e3:.3f} ms per request), "
          f"ebzip_load {load_cpu:.2f} s ({load_cpu / requests * 1e3:.3f} ms per request), "
          f"warm-up included")
PYEOF
}

echo "== ebzip service load benchmark"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "commit:  $(git log -1 --format='%h %cd' 2>/dev/null || echo unknown)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.0f GiB RAM", $2 / 1048576}' /proc/meminfo)"
if command -v nvidia-smi > /dev/null; then
  echo "gpu:     $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)"
fi
echo "backend: $backend, method: $method, REL $rel"
echo "cores:   ebzipd ${SERVER_CPUS:-any}, ebzip_load ${LOAD_CPUS:-any}"

status=0
for batching in $batchings; do
  echo
  echo "==== ebzipd --batching=$batching"
  "${ebzipd[@]}" --listen 127.0.0.1:0 --metrics_listen 127.0.0.1:0 --backend "$backend" \
      --batching="$batching" "${extra_server[@]}" 2> "$work/ebzipd.log" &
  server_pid=$!
  rm -f "$work/batches.prev"
  if ! port=$(log_field "$work/ebzipd.log" port) ||
     ! mport=$(log_field "$work/ebzipd.log" metrics_port); then
    cat "$work/ebzipd.log" >&2
    exit 1
  fi
  grep -m1 "ebzipd serving" "$work/ebzipd.log"
  for w in $workloads; do
    case $w in
      big)   bytes=${BIG_BYTES:-$((1 << 30))}; n=${BIG_REQUESTS:-3}; s=${BIG_STREAMS:-1}; warm=${BIG_WARMUP:-0};;
      mid)   bytes=${MID_BYTES:-$((256 << 20))}; n=${MID_REQUESTS:-8}; s=${MID_STREAMS:-4}; warm=${MID_WARMUP:-0};;
      small) bytes=${SMALL_BYTES:-$((256 << 10))}; n=${SMALL_REQUESTS:-10000}; s=${SMALL_STREAMS:-32}; warm=${SMALL_WARMUP:-200};;
      *) echo "unknown workload $w" >&2; exit 2;;
    esac
    echo
    echo "--- $w: $n x $bytes B, $s streams, batching=$batching, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    rc=0
    server_cpu0=$(server_cpu "$server_pid")
    times > "$work/times0"
    "${load[@]}" --server "127.0.0.1:$port" --method "$method" --array_bytes "$bytes" \
        --requests "$n" --streams "$s" --warmup "$warm" --rel "$rel" "${extra_load[@]}" || rc=$?
    if [[ $rc != 0 ]]; then
      echo "ebzip_load exited $rc"
      status=1
    fi
    times > "$work/times1"
    server_cpu1=$(server_cpu "$server_pid")
    batch_summary "$mport" \
        "$(awk -v a="$server_cpu0" -v b="$server_cpu1" 'BEGIN {print b - a}')" \
        "$(awk -v a="$(children_cpu "$work/times0")" -v b="$(children_cpu "$work/times1")" 'BEGIN {print b - a}')"
  done
  kill -TERM "$server_pid"
  rc=0
  wait "$server_pid" || rc=$?
  server_pid=
  if [[ $rc != 0 ]]; then
    echo "ebzipd exited $rc after SIGTERM"; tail -5 "$work/ebzipd.log"; status=1
  fi
  if grep -q '"level":"\(warning\|error\)"' "$work/ebzipd.log"; then
    echo "ebzipd logged warnings or errors:"
    grep '"level":"\(warning\|error\)"' "$work/ebzipd.log" | head -5
  fi
done
exit $status
