#!/bin/bash
# Runs the GPU tests, compute-sanitizer and the GPU benchmark on a GPU host
# that has the CUDA driver but none of the project's libraries (the lent H100:
# see bench/README.md). Expects, built and packed on the development machine:
#   .device/bundle.tgz   ../shared/tools/bundle output (gpu_codec_test, ebzip_bench_gpu,
#                        server_gpu_*_test, ebzipd, ebzip_load)
#   .device/data/*.gz    ferret-datasets files, gzipped
# usage: scripts/gpu_host_check.sh [tests|server|sanitize|bench|quickbench|servicebench|soak]...
# (soak: bench/soak.sh for SOAK_SECONDS, default 600; under the device tool's
# 10-minute limit set it lower)
# (logs to $OUT)
set -uo pipefail
out=${OUT:-/tmp/gpu_out}
mkdir -p "$out" /tmp/ebzip_gpu/ferret
cd "$(dirname "$0")/.."
tar xzf .device/bundle.tgz -C /tmp/ebzip_gpu
for f in .device/data/*.gz; do
  gunzip -c "$f" > "/tmp/ebzip_gpu/ferret/$(basename "$f" .gz)"
done
export EBZIP_FERRET_DATA=/tmp/ebzip_gpu/ferret
run=/tmp/ebzip_gpu/bundle/run
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
status=0
for step in "$@"; do
  case $step in
    tests)
      timeout 300 "$run" gpu_codec_test 2>&1 | tee "$out/tests.log" | grep -E "^\[  (FAILED|  OK|PASSED|SKIPPED)|Failure|error|differ|skipping" | head -80
      status=$((status | PIPESTATUS[0]));;
    server)
      for t in server_gpu_roundtrip_test server_gpu_faults_test server_gpu_streaming_test; do
        timeout 400 "$run" $t 2>&1 | tee "$out/$t.log" | grep -E "^\[  (FAILED|  OK|PASSED|SKIPPED)|Failure|Expected|Which" | head -60
        status=$((status | PIPESTATUS[0]))
      done;;
    soak)
      EBZIP_RUN="$run" EBZIP_BACKEND=gpu timeout 590 bench/soak.sh 2>&1 | tee "$out/soak.log"
      status=$((status | PIPESTATUS[0]));;
    servicebench)
      EBZIP_RUN="$run" EBZIP_BACKEND=gpu timeout 500 bench/service_bench.sh 2>&1 | tee "$out/service_bench.log"
      status=$((status | PIPESTATUS[0]));;
    sanitize)
      export LD_LIBRARY_PATH=/tmp/ebzip_gpu/bundle/lib
      for tool in memcheck racecheck; do
        timeout 240 compute-sanitizer --tool $tool --error-exitcode 3 \
          /tmp/ebzip_gpu/bundle/bin/gpu_codec_test \
          --gtest_filter='*SmallConstant*:*SmallWholeBlocks*:*SmallOverflow*:*SmallCorrupt*' > "$out/$tool.log" 2>&1
        rc=$?
        echo "compute-sanitizer $tool: exit $rc"; tail -3 "$out/$tool.log"
        status=$((status | rc))
      done
      unset LD_LIBRARY_PATH;;
    bench|quickbench)
      flags=(--field="$EBZIP_FERRET_DATA/etopo5.cdf:ROSE")
      [[ $step == quickbench ]] && flags+=(--quick)
      timeout 500 "$run" ebzip_bench_gpu "${flags[@]}" 2>&1 | tee "$out/bench.log"
      status=$((status | PIPESTATUS[0]));;
  esac
done
exit $status
