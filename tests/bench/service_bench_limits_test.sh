#!/bin/bash
# bench/service_bench.sh with its limits, at a tiny size: ebzip_transfer_limits
# runs before ebzipd, and each operation's figure is printed as a fraction
# of the socket limits measured in the same run, for as many connections
# as ebzip_load used, and the small workload's requests per second as a
# fraction of gRPC's own calls; LIMITS=0 leaves all of that out. Only the lines' form
# is checked, never a rate.
# usage: service_bench_limits_test.sh BUILD_DIR   (with ebzipd, ebzip_load and
#        ebzip_transfer_limits built)
set -uo pipefail
build=$1
bench="$(dirname "$0")/../../bench/service_bench.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; echo "--- output"; cat "$out"; exit 1; }
num='[0-9]+(\.[0-9]+)?'

# Two streams of 1 MiB: the limits move 2 MiB over 2 connections.
EBZIP_BACKEND=cpu WORKLOADS=big BATCHING=true BIG_BYTES=$((1 << 20)) BIG_REQUESTS=4 BIG_STREAMS=2 \
  bash "$bench" "$build" > "$out" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "exit $rc"
grep -q '^==== limits for big: 2 x 1048576 B, connections: 2' "$out" || fail "no limits header"
grep -qE "^tcp +connections=2 +$num +$num$" "$out" || fail "no TCP x2 row"
grep -q "^# cuda" "$out" && fail "CUDA copies measured for EBZIP_BACKEND=cpu"
for op in compress decompress; do
  way=up; [[ $op == decompress ]] && way=down
  grep -qE "^big $op: $num GB/s \(2 x 1048576 B / p50 $num ms\) = $num % of TCP x2 $num GB/s, $num % of UDS x2 $num GB/s, $num % of gRPC $way x2 $num GB/s$" \
    "$out" || fail "no fraction line for $op"
done
grep -qE "^big host limits: memcpy 1 thread $num GB/s, memcpy 2 threads $num GB/s, no H2D/D2H copies measured$" \
  "$out" || fail "no host limits line"

# Over a Unix-domain socket: the same lines, gRPC's limit over such sockets.
TRANSPORT=unix EBZIP_BACKEND=cpu WORKLOADS=big BATCHING=true BIG_BYTES=$((1 << 20)) BIG_REQUESTS=2 \
  BIG_STREAMS=2 bash "$bench" "$build" > "$out" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "TRANSPORT=unix: exit $rc"
grep -q '^backend: cpu, method: both, REL 1e-4, transport unix$' "$out" || fail "no transport line"
for op in compress decompress; do
  way=up; [[ $op == decompress ]] && way=down
  grep -qE "^big $op: $num GB/s \(2 x 1048576 B / p50 $num ms\) = $num % of TCP x2 $num GB/s, $num % of UDS x2 $num GB/s, $num % of gRPC UDS $way x2 $num GB/s$" \
    "$out" || fail "TRANSPORT=unix: no fraction line for $op"
done

# The small workload: its requests per second against gRPC's own calls of
# the same shape, on as many connections.
EBZIP_BACKEND=cpu WORKLOADS=small BATCHING=true SMALL_BYTES=$((64 << 10)) SMALL_REQUESTS=20 \
  SMALL_STREAMS=2 SMALL_WARMUP=2 bash "$bench" "$build" > "$out" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "small: exit $rc"
grep -qE "^grpc_calls +streams=2 +[0-9]+ +[0-9]+ calls/s$" "$out" || fail "small: no gRPC calls row"
grep -qE "^small requests: [0-9]+ /s \($num round trips/s\) = [0-9]+ % of gRPC's own [0-9]+ calls/s \(2 streams, 65536 B arrays\)$" \
  "$out" || fail "small: no requests line"

LIMITS=0 EBZIP_BACKEND=cpu WORKLOADS=big BATCHING=true BIG_BYTES=$((1 << 20)) BIG_REQUESTS=2 \
  bash "$bench" "$build" > "$out" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "LIMITS=0: exit $rc"
grep -q "^big decompress:" "$out" && fail "LIMITS=0 still printed fractions"
grep -q "limits" "$out" && fail "LIMITS=0 still ran the limits"
grep -q "^decompress " "$out" || fail "LIMITS=0: no ebzip_load table"
echo "PASS"
