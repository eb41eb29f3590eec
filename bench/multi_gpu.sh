#!/bin/bash
# Issue #6 on a host with two GPUs: the GPU server tests with one and with
# two visible devices (archives must be byte-identical to the CPU codec's,
# hence to each other), then throughput with 1 and 2 GPUs for
#   many   MANY_REQUESTS x 1 GiB round trips from MANY_STREAMS streams
#          (MANY_STREAMS may list several counts, e.g. "6 12")
#   one    one ONE_BYTES round trip (streamed: ABS bound, frames spread
#          over the GPUs by the shared queue)
# Without service_bench.sh's limits (LIMITS=0, unless set): only the
# service rows are kept below; run ebzip_transfer_limits once for them.
# usage (after scripts/gpu_host_check.sh has unpacked the bundle):
#   bench/multi_gpu.sh        logs to $OUT (or /tmp)
set -uo pipefail
cd "$(dirname "$0")/.."
run=/tmp/ebzip_gpu/bundle/run
out=${OUT:-/tmp}
status=0
for devices in 0 0,1; do
  export CUDA_VISIBLE_DEVICES=$devices
  echo "=== CUDA_VISIBLE_DEVICES=$devices"
  for t in server_gpu_streaming_test server_gpu_roundtrip_test; do
    log="$out/$t-gpus-${devices//,/-}.log"  # no commas: the device tool drops such names
    timeout 300 "$run" $t > "$log" 2>&1
    rc=$?
    echo "$t: exit $rc, $(grep -c '^\[       OK' "$log") passed, $(grep -c '^\[  SKIPPED \] .* ms)$' "$log") skipped"
    status=$((status | rc))
  done
  for streams in ${MANY_STREAMS:-6}; do
    LIMITS=${LIMITS:-0} EBZIP_RUN="$run" EBZIP_BACKEND=gpu WORKLOADS=big BATCHING=true METHOD=both \
      BIG_REQUESTS=${MANY_REQUESTS:-12} BIG_STREAMS=$streams LOAD_FLAGS="--abs 1e-2" \
      timeout 200 bench/service_bench.sh 2>&1 | grep -E '^(compress|decompress|round trip|server:|ebzip_load: method)'
  done
  LIMITS=${LIMITS:-0} EBZIP_RUN="$run" EBZIP_BACKEND=gpu WORKLOADS=big BATCHING=true METHOD=both \
    BIG_REQUESTS=1 BIG_STREAMS=1 BIG_BYTES=${ONE_BYTES:-$((16 << 30))} LOAD_FLAGS="--abs 1e-2" \
    timeout 200 bench/service_bench.sh 2>&1 | grep -E '^(compress|decompress|round trip|server:)'
done
exit $status
