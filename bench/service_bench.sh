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
# per request, and each operation's throughput as a fraction of the host's
# raw limits (below):
#   big    BIG_REQUESTS arrays of BIG_BYTES from BIG_STREAMS streams   (3 x 1 GiB, 1)
#   mid    MID_REQUESTS arrays of MID_BYTES from MID_STREAMS streams   (8 x 256 MiB, 4)
#   small  SMALL_REQUESTS arrays of SMALL_BYTES from SMALL_STREAMS     (10000 x 256 KiB, 32)
# BIG_PARTS / MID_PARTS > 0 send each array through the C++ client library
# split over that many calls, each on its own connection (ebzip_load
# --parts; RemoteOptions::streams); 0 (the default): one call per array.
# The defaults suit a small CPU machine; on a GPU host use e.g.
#   BIG_REQUESTS=16 BIG_STREAMS=2 MID_REQUESTS=64 SMALL_REQUESTS=50000
#
# Limits (issue #24): before starting ebzipd, it runs ebzip_transfer_limits
# once per workload on this host, moving STREAMS x BYTES over STREAMS
# loopback TCP connections and Unix-domain sockets (the client's one
# connection per stream) and through gRPC calls that do nothing else, both
# ways, plus memcpy and, with a CUDA device visible, pinned and pageable
# H2D/D2H copies. After each workload it prints lines
#   big compress: 1.05 GB/s (1 x 1073741824 B / p50 1018.0 ms) = 23 % of TCP x1 4.60 GB/s, ...
# (compression against gRPC up, decompression against gRPC down)
# the rate being streams x array bytes / the operation's p50 latency, the
# limits the tool's medians. For the small workload it also measures gRPC's
# own rate of calls shaped as its round trips (STREAMS callers, SMALL_REQUESTS
# round trips, arrays of SMALL_BYTES, 16 KiB archives; bench/grpc_transfer.h)
# and prints the requests per second as a fraction of it:
#   small requests: 16285 /s (8142.5 round trips/s) = 65 % of gRPC's own 25030 calls/s ...
#
# Environment:
#   EBZIP_BACKEND   ebzipd --backend (auto, cpu, gpu; default auto)
#   EBZIP_RUN       launcher prefix: binaries run as "$EBZIP_RUN ebzipd ARGS" and
#                   "$EBZIP_RUN ebzip_load ARGS" (e.g. a bundle directory's
#                   "bundle/run", bench/README.md); unset: BUILD_DIR/server/ebzipd and
#                   BUILD_DIR/bench/ebzip_load
#   METHOD          ebzip_load --method (default both)
#   REL             relative error bound (default 1e-4)
#   WORKLOADS       which to run, in order (default "big mid small")
#   BATCHING        which settings (default "true false")
#   EBZIPD_FLAGS    more ebzipd flags;  LOAD_FLAGS  more ebzip_load flags
#   TRANSPORT       tcp (default): ebzipd on a loopback port; unix: on a Unix-domain
#                   socket in a temporary directory (--listen unix:PATH), the
#                   figures then read against gRPC over such sockets
#   SMALL_WARMUP    warm-up requests before the small workload (default 200)
#   LIMITS          0: skip ebzip_transfer_limits and the fractions (default 1)
#   LIMITS_FLAGS    more ebzip_transfer_limits flags (e.g. --repeats=5)
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
transport=${TRANSPORT:-tcp}
case $transport in tcp|unix) ;; *) echo "TRANSPORT is tcp or unix" >&2; exit 2;; esac
batchings=${BATCHING:-true false}
read -r -a extra_server <<< "${EBZIPD_FLAGS:-}"
read -r -a extra_load <<< "${LOAD_FLAGS:-}"
read -r -a extra_limits <<< "${LIMITS_FLAGS:-}"

# shellcheck source=bench/binaries.sh
source "$(dirname "$0")/binaries.sh"
find_binaries "$build"
if [[ -n ${SERVER_CPUS:-} ]]; then ebzipd=(taskset -c "$SERVER_CPUS" "${ebzipd[@]}"); fi
if [[ -n ${LOAD_CPUS:-} ]]; then load=(taskset -c "$LOAD_CPUS" "${load[@]}"); fi
measure_limits=${LIMITS:-1}
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

# WORKLOAD: sets bytes, n (requests), s (streams) and warm (warm-up requests).
workload_params() {
  case $1 in
    big)   bytes=${BIG_BYTES:-$((1 << 30))}; n=${BIG_REQUESTS:-3}; s=${BIG_STREAMS:-1}; warm=${BIG_WARMUP:-0}; p=${BIG_PARTS:-0};;
    mid)   bytes=${MID_BYTES:-$((256 << 20))}; n=${MID_REQUESTS:-8}; s=${MID_STREAMS:-4}; warm=${MID_WARMUP:-0}; p=${MID_PARTS:-0};;
    small) bytes=${SMALL_BYTES:-$((256 << 10))}; n=${SMALL_REQUESTS:-10000}; s=${SMALL_STREAMS:-32}; warm=${SMALL_WARMUP:-200}; p=0;;
    *) echo "unknown workload $1" >&2; exit 2;;
  esac
  # Connections: one per stream, or one per part of each stream's array.
  c=$((s * (p > 0 ? p : 1)))
}

# WORKLOAD LOAD_OUTPUT LIMITS_OUTPUT: each operation of ebzip_load's table
# as a fraction of the socket limits for as many connections as it used,
# then the host's other limits measured for the workload.
limit_fractions() {
  "$PY" - "$@" <<'PYEOF'
import re, sys
workload, load_path, limits_path, transport = sys.argv[1:5]
load = open(load_path).read()
limits = {}
for m in re.finditer(r'^limit (\S+) (\S+) bytes=\d+ GB/s=(\S+)', open(limits_path).read(), re.M):
    limits[(m.group(1), m.group(2))] = float(m.group(3))
head = re.search(r'method \S+, (\d+) B arrays.*?(\d+) streams over (\d+) channels', load)
if not head:
    sys.exit(f"{workload}: no ebzip_load header to relate to the limits")
array, streams, channels = (int(g) for g in head.groups())
parts = re.search(r'(\d+) parts per array', load)
if parts:  # the client library: each part on a connection of its own
    channels = streams * int(parts.group(1))
def of(rate, what, n, label):
    lim = limits.get((what, f"connections={n}"))
    if not lim:
        return f"{label} x{n} not measured"
    pct = 100 * rate / lim
    return f"{pct:.0f} % of {label} x{n} {lim:.2f} GB/s" if pct >= 10 else \
        f"{pct:.1f} % of {label} x{n} {lim:.2f} GB/s"
for op in ("compress", "decompress"):
    # op, requests, errors, array GB, seconds, GB/s, req/s, p50 ms, ...
    row = re.search(r'^' + op + r' +(\d+)(?: +\S+){5} +(\S+) ', load, re.M)
    if not row or int(row.group(1)) == 0:
        continue
    p50_ms = float(row.group(2))
    rate = streams * array / (p50_ms * 1e-3) * 1e-9
    # gRPC's own calls the way the array goes: up for compression, down
    # for decompression.
    # over the transport ebzipd listened on.
    way = "up" if op == "compress" else "down"
    grpc = ("grpc_" if transport == "tcp" else "grpc_uds_") + way
    label = ("gRPC " if transport == "tcp" else "gRPC UDS ") + way
    print(f"{workload} {op}: {rate:.2f} GB/s ({streams} x {array} B / p50 {p50_ms:.1f} ms) = "
          f"{of(rate, 'tcp', channels, 'TCP')}, {of(rate, 'uds', channels, 'UDS')}, "
          f"{of(rate, grpc, channels, label)}")
host = []
wanted = [("memcpy", "threads=1", "memcpy 1 thread")]
if streams > 1:
    wanted.append(("memcpy", f"threads={streams}", f"memcpy {streams} threads"))
# The copies on whichever device the tool measured (its --device).
device = next((d for w, d in limits if w == "h2d_pinned"), None)
wanted += [("h2d_pinned", device, "H2D pinned"), ("d2h_pinned", device, "D2H pinned"),
           ("h2d_pageable", device, "H2D pageable"), ("d2h_pageable", device, "D2H pageable")]
for what, detail, label in wanted:
    v = limits.get((what, detail))
    if v is not None:
        host.append(f"{label} {v:.2f} GB/s")
if not any(what.startswith("h2d") for what, _ in limits):
    host.append("no H2D/D2H copies measured")
print(f"{workload} host limits: " + ", ".join(host))
# Many small calls: the requests per second against gRPC's own calls of the
# same shape, on as many connections.
calls = re.search(r'^limit (grpc_calls|grpc_uds_calls) streams=(\d+) bytes=(\d+) calls/s=(\d+)',
                  open(limits_path).read(), re.M)
trips = re.search(r'^round trip +(\d+)(?: +\S+){4} +(\S+) ', load, re.M)
if calls and trips and int(trips.group(1)) > 0:
    per_s = 2 * float(trips.group(2))
    own = int(calls.group(4))
    label = "gRPC's own" if calls.group(1) == "grpc_calls" else "gRPC UDS's own"
    print(f"{workload} requests: {per_s:.0f} /s ({float(trips.group(2)):.1f} round trips/s) = "
          f"{100 * per_s / own:.0f} % of {label} {own} calls/s ({calls.group(2)} streams, "
          f"{calls.group(3)} B arrays)")
PYEOF
}

echo "== ebzip service load benchmark"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "commit:  $(git log -1 --format='%h %cd' 2>/dev/null || echo unknown)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.0f GiB RAM", $2 / 1048576}' /proc/meminfo)"
if command -v nvidia-smi > /dev/null; then
  echo "gpu:     $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)"
fi
echo "backend: $backend, method: $method, REL $rel, transport $transport"
echo "cores:   ebzipd ${SERVER_CPUS:-any}, ebzip_load ${LOAD_CPUS:-any}"

# The limits, on this host in this run, before ebzipd starts: for each
# workload, its streams' bytes over as many connections (bench/README.md).
# No CUDA copies when the backend is the CPU: they limit nothing then.
if [[ $measure_limits != 0 && -n $limits_missing ]]; then
  echo
  echo "limits: $limits_missing; the figures come without their limits (LIMITS=0 to skip)"
  measure_limits=0
fi
if [[ $measure_limits != 0 ]]; then
  grpc=grpc
  [[ $transport == unix ]] && grpc=grpc_uds
  measure=tcp,uds,$grpc,memcpy,cuda
  [[ $backend == cpu ]] && measure=tcp,uds,$grpc,memcpy
  for w in $workloads; do
    workload_params "$w"
    echo
    echo "==== limits for $w: $s x $bytes B, connections: $c (ebzip_transfer_limits)"
    rc=0
    what=$measure calls=()
    if [[ $w == small && $method == both ]]; then
      what=$measure,${grpc}_calls
      calls=(--call_streams="$s" --call_round_trips="$n" --call_array_bytes="$bytes")
    fi
    "${limits[@]}" --bytes="$((s * bytes))" --connections="$c" --measure="$what" \
        "${calls[@]}" "${extra_limits[@]}" > "$work/limits-$w.txt" || rc=$?
    grep -v '^limit ' "$work/limits-$w.txt" || true
    if [[ $rc != 0 ]]; then
      echo "ebzip_transfer_limits exited $rc: $w's figures come without (some of) their limits"
    fi
  done
fi

status=0
for batching in $batchings; do
  echo
  echo "==== ebzipd --batching=$batching"
  listen=127.0.0.1:0
  [[ $transport == unix ]] && listen=unix:$work/ebzipd.sock
  "${ebzipd[@]}" --listen "$listen" --metrics_listen 127.0.0.1:0 --backend "$backend" \
      --batching="$batching" "${extra_server[@]}" 2> "$work/ebzipd.log" &
  server_pid=$!
  rm -f "$work/batches.prev"
  if ! mport=$(log_field "$work/ebzipd.log" metrics_port); then
    cat "$work/ebzipd.log" >&2
    exit 1
  fi
  if [[ $transport == unix ]]; then
    target=$listen
  elif port=$(log_field "$work/ebzipd.log" port); then
    target=127.0.0.1:$port
  else
    cat "$work/ebzipd.log" >&2
    exit 1
  fi
  grep -m1 "ebzipd serving" "$work/ebzipd.log"
  for w in $workloads; do
    workload_params "$w"
    echo
    echo "--- $w: $n x $bytes B, $s streams, batching=$batching, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    rc=0
    server_cpu0=$(server_cpu "$server_pid")
    times > "$work/times0"
    # tee: the table is also wanted for the fractions below (tee's CPU
    # time, a few kB copied, lands in ebzip_load's).
    set +e
    "${load[@]}" --server "$target" --method "$method" --array_bytes "$bytes" \
        --requests "$n" --streams "$s" --warmup "$warm" --rel "$rel" --parts "$p" \
        "${extra_load[@]}" |
      tee "$work/load.out"
    rc=${PIPESTATUS[0]}
    set -e
    if [[ $rc != 0 ]]; then
      echo "ebzip_load exited $rc"
      status=1
    fi
    times > "$work/times1"
    server_cpu1=$(server_cpu "$server_pid")
    batch_summary "$mport" \
        "$(awk -v a="$server_cpu0" -v b="$server_cpu1" 'BEGIN {print b - a}')" \
        "$(awk -v a="$(children_cpu "$work/times0")" -v b="$(children_cpu "$work/times1")" 'BEGIN {print b - a}')"
    if [[ $measure_limits != 0 ]]; then
      limit_fractions "$w" "$work/load.out" "$work/limits-$w.txt" "$transport" || true
    fi
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
