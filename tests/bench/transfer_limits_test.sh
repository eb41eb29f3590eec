#!/bin/bash
# ebzip_transfer_limits at a tiny size (bench/transfer_limits.cc): it runs,
# prints a table row and a machine-readable line for every measurement asked
# for, each with a positive rate, and refuses bad flags with exit 2. No
# rate is compared with anything: timings belong in benchmarks.
# usage: transfer_limits_test.sh PATH/TO/ebzip_transfer_limits
set -uo pipefail
tool=$1
fail() { echo "FAIL: $*"; echo "--- output"; cat "$out"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

"$tool" --bytes=4M --connections=1,2 --measure=tcp,uds,grpc,grpc_uds,memcpy > "$out" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "exit $rc"
for want in "tcp connections=1" "tcp connections=2" "uds connections=1" "uds connections=2" \
            "grpc_up connections=1" "grpc_up connections=2" "grpc_down connections=1" \
            "grpc_down connections=2" "grpc_uds_up connections=1" "grpc_uds_up connections=2" \
            "grpc_uds_down connections=1" "grpc_uds_down connections=2" "memcpy threads=1" \
            "memcpy threads=2"; do
  line=$(grep -E "^limit $want bytes=4194304 GB/s=[0-9.]+ best=[0-9.]+$" "$out") ||
    fail "no machine-readable line for $want"
  awk -v l="$line" 'BEGIN {
    split(l, f, " "); split(f[5], r, "="); split(f[6], b, "=");
    exit !(r[2] > 0 && b[2] >= r[2]) }' || fail "not a positive rate, or best < median: $line"
  read -r what detail <<< "$want"
  grep -qE "^$what +$detail +[0-9.]+ +[0-9.]+$" "$out" || fail "no table row for $want"
done
[[ $(grep -c '^limit ' "$out") == 14 ]] || fail "expected exactly 14 limit lines"
grep -q "cuda" "$out" && fail "cuda measured though not asked for"

# gRPC's small calls: a rate per transport, in calls per second.
"$tool" --bytes=64K --connections=1 --measure=grpc_calls,grpc_uds_calls --call_streams=2 \
  --call_round_trips=20 --call_array_bytes=64K --call_archive_bytes=4K --repeats=2 > "$out" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "calls: exit $rc"
for what in grpc_calls grpc_uds_calls; do
  line=$(grep -E "^limit $what streams=2 bytes=65536 calls/s=[0-9]+ best=[0-9]+$" "$out") ||
    fail "no machine-readable line for $what"
  awk -v l="$line" 'BEGIN {
    split(l, f, " "); split(f[5], r, "="); split(f[6], b, "=");
    exit !(r[2] > 0 && b[2] >= r[2]) }' || fail "not a positive rate, or best < median: $line"
  grep -qE "^$what +streams=2 +[0-9]+ +[0-9]+ calls/s$" "$out" || fail "no table row for $what"
done
[[ $(grep -c '^limit ' "$out") == 2 ]] || fail "calls: expected exactly 2 limit lines"

# Bad flags: exit 2, nothing measured.
for bad in "--bytes=3 --connections=4" "--bytes=1X" "--measure=tcp,nfs" "--connections=0" \
           "--repeats=0" "--call_streams=0" "--call_streams=8 --call_round_trips=4" \
           "--call_array_bytes=64M"; do
  # shellcheck disable=SC2086  # split on purpose
  "$tool" $bad > "$out" 2>&1
  rc=$?
  [[ $rc == 2 ]] || fail "$bad: exit $rc, want 2"
done
echo "PASS"
