#!/bin/bash
# Runs the GPU tests, compute-sanitizer and the GPU benchmark on a GPU host
# that has the CUDA driver but none of the project's libraries (the lent H100:
# see bench/README.md). Expects, built and packed on the development machine:
#   .device/bundle.tgz   a bundle directory (bench/README.md: every GPU test binary,
#                        build/gpu_tests.txt, and ebzip_bench_gpu, ebzipd, ebzip_load,
#                        ebzip_transfer_limits), or bundle.txz (xz)
#   .device/data/*.gz    ferret-datasets files, gzipped (or *.xz)
# usage: scripts/gpu_host_check.sh [tests|server|sanitize|bench|quickbench|servicebench|
#                                   soak|soak-start|soak-collect]...
# tests: every *_test binary in the bundle, one log each and a line per binary
#   (bundle all of build/gpu_tests.txt: GPU work is done when they all pass).
# server: the server's GPU tests alone.
# soak: bench/soak.sh for SOAK_SECONDS (600) in the foreground: under the
#   device tool's 10-minute limit per command, set it lower.
# soak-start, then soak-collect in the next command: the full 10 minutes. The
#   soak runs detached and outlives the command that started it, provided the
#   next command comes before the host is given back (the tool holds it
#   about 30 s after a command ends, so call soak-collect at once).
#   soak-start stays SOAK_HOLD seconds (300) to spend the first command's
#   time; soak-collect fails at once when this host has no soak (a fresh
#   host), else waits for the verdict (up to COLLECT_SECONDS, 560). A soak
#   takes SOAK_SECONDS plus about 20 s.
# (logs to $OUT)
set -uo pipefail
out=${OUT:-/tmp/gpu_out}
mkdir -p "$out" /tmp/ebzip_gpu/ferret
cd "$(dirname "$0")/.."
# xz packs the bundle and the fields a third smaller than gzip (the device
# tool carries 64 MiB); python3 unpacks it where the host has no xz.
unxz_to() { python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; }
# soak-collect alone leaves the bundle as it is: a running soak's ebzipd
# uses its libraries.
if [[ "$*" == soak-collect ]]; then
  :
elif [[ -f .device/bundle.txz ]]; then
  rm -rf /tmp/ebzip_gpu/bundle  # no binary of an earlier bundle left to run
  unxz_to .device/bundle.txz /tmp/ebzip_gpu/bundle.tar && tar xf /tmp/ebzip_gpu/bundle.tar -C /tmp/ebzip_gpu
else
  rm -rf /tmp/ebzip_gpu/bundle
  tar xzf .device/bundle.tgz -C /tmp/ebzip_gpu
fi
for f in .device/data/*.gz .device/data/*.xz; do
  [[ -f $f ]] || continue
  case $f in
    *.gz) gunzip -c "$f" > "/tmp/ebzip_gpu/ferret/$(basename "$f" .gz)";;
    *.xz) unxz_to "$f" "/tmp/ebzip_gpu/ferret/$(basename "$f" .xz)";;
  esac
done
export EBZIP_FERRET_DATA=/tmp/ebzip_gpu/ferret
run=/tmp/ebzip_gpu/bundle/run
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
status=0
for step in "$@"; do
  case $step in
    tests)
      tests=$(ls /tmp/ebzip_gpu/bundle/bin | grep '_test$')
      echo "$(wc -w <<<"$tests") test binaries in the bundle"
      for t in $tests; do
        EBZIP_GPU_REQUIRE_ALL_FIELDS=1 timeout 400 "$run" "$t" > "$out/$t.log" 2>&1
        rc=$?
        echo "$t rc=$rc $(grep -E '^\[  (PASSED|FAILED)|^\[  SKIPPED \] [0-9]' "$out/$t.log" | tr '\n' ' ')"
        [[ $rc == 0 ]] || grep -E "^\[  FAILED|Failure|Expected|Which" "$out/$t.log" | head -20
        status=$((status | rc))
      done;;
    server)
      for t in $(ls /tmp/ebzip_gpu/bundle/bin | grep -E '^server_gpu_.*_test$') gpu_backend_test; do
        timeout 400 "$run" $t 2>&1 | tee "$out/$t.log" | grep -E "^\[  (FAILED|  OK|PASSED|SKIPPED)|Failure|Expected|Which" | head -60
        status=$((status | PIPESTATUS[0]))
      done;;
    soak)
      EBZIP_RUN="$run" EBZIP_BACKEND=gpu timeout 590 bench/soak.sh 2>&1 | tee "$out/soak.log"
      status=$((status | PIPESTATUS[0]));;
    soak-start)
      rm -rf /tmp/ebzip_soak && mkdir -p /tmp/ebzip_soak
      OUT=/tmp/ebzip_soak EBZIP_RUN="$run" EBZIP_BACKEND=gpu \
        setsid nohup bench/soak.sh > /tmp/ebzip_soak/soak.log 2>&1 < /dev/null &
      echo $! > /tmp/ebzip_soak/pid
      sleep 10
      head -2 /tmp/ebzip_soak/soak.log
      if ! kill -0 "$(cat /tmp/ebzip_soak/pid)" 2>/dev/null; then
        echo "soak-start: the soak ended at once"
        status=1
        continue
      fi
      sleep "${SOAK_HOLD:-300}"
      tail -1 /tmp/ebzip_soak/soak.log;;
    soak-collect)
      if [[ ! -f /tmp/ebzip_soak/pid ]]; then
        echo "soak-collect: no soak on this host (it was given back after soak-start?)"
        status=1
        continue
      fi
      for _ in $(seq "${COLLECT_SECONDS:-560}"); do
        grep -q "^codes:" /tmp/ebzip_soak/soak.log && break
        kill -0 "$(cat /tmp/ebzip_soak/pid)" 2>/dev/null || break
        sleep 1
      done
      cp /tmp/ebzip_soak/soak.log /tmp/ebzip_soak/soak.csv "$out/" 2>/dev/null
      tail -4 /tmp/ebzip_soak/soak.log
      grep -q "^codes:" /tmp/ebzip_soak/soak.log || status=1;;
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
