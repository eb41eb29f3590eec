#!/usr/bin/env bash
# Builds archive_reader_fuzzer (libFuzzer with ASan and UBSan, so clang) and
# runs it for a bounded time on a corpus seeded with valid archives.
#
#   scripts/fuzz.sh [SECONDS [LIBFUZZER_FLAGS...]]    (SECONDS default 60)
#
# Exits 0 when the run ends without a finding, and non-zero when the fuzzer
# reports a crash, a sanitizer error, a contract violation (see the target's
# comment), a timeout or running out of memory. The input that did it is left
# in the artifacts directory; rerun it with `archive_reader_fuzzer FILE`.
#
# Environment: EBZIP_FUZZ_BUILD (build directory, default build-fuzz),
# EBZIP_FUZZ_WORK (corpus, artifacts and log, default .fuzz/archive_reader),
# EBZIP_FUZZ_JOBS (build parallelism, default 2).
set -euo pipefail

seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [SECONDS [LIBFUZZER_FLAGS...]]" >&2
  exit 2
fi
shift $(($# > 0 ? 1 : 0))
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${EBZIP_FUZZ_BUILD:-$root/build-fuzz}
work=${EBZIP_FUZZ_WORK:-$root/.fuzz/archive_reader}
jobs=${EBZIP_FUZZ_JOBS:-2}

# clang++ with its libFuzzer and sanitizer runtimes (libclang-rt-14-dev on
# Debian 12): the probe links a trivial fuzz target.
can_link_fuzzer() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local probe ok=0
  probe=$(mktemp -d)
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
    >"$probe/probe.cc"
  if ! clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cc" -o "$probe/probe" \
    >/dev/null 2>&1; then
    ok=1
  fi
  rm -rf "$probe"
  return $ok
}
if ! can_link_fuzzer; then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    sudo="sudo"
  fi
  echo "fuzz.sh: installing clang and libclang-rt-14-dev"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    clang libclang-rt-14-dev
  if ! can_link_fuzzer; then
    echo "fuzz.sh: clang++ still cannot link a libFuzzer target" >&2
    exit 1
  fi
fi

generator=()
if command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi
configure() {  # SOURCE_DIR BUILD_DIR
  mkdir -p "$2"
  CC=clang CXX=clang++ cmake -S "$1" -B "$2" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEBZIP_FUZZ=ON -DEBZIP_CUDA=OFF >"$2/configure.log" 2>&1
}
has_target() {  # BUILD_DIR
  cmake --build "$1" --target help 2>/dev/null | grep -q archive_reader_fuzzer
}

bin="$build"
if ! configure "$root" "$build" || ! has_target "$build"; then
  # The fuzzer needs only the codec: build tests/fuzz on its own when the
  # whole project does not configure with clang, or does not include
  # tests/fuzz yet.
  echo "fuzz.sh: the project build has no archive_reader_fuzzer target (see" \
    "$build/configure.log); building tests/fuzz on its own"
  src="$build/standalone-src"
  bin="$build/standalone"
  mkdir -p "$src" "$bin"
  cat >"$src/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(ebzip_fuzz CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
find_package(absl REQUIRED)
add_subdirectory("$root/tests/fuzz" fuzz)
CMAKE
  if ! configure "$src" "$bin"; then
    cat "$bin/configure.log" >&2
    exit 1
  fi
fi
cmake --build "$bin" --target archive_reader_fuzzer archive_seed_corpus -j "$jobs"
fuzzer=$(find "$bin" -name archive_reader_fuzzer -type f -perm -u+x | head -n 1)
seeder=$(find "$bin" -name archive_seed_corpus -type f -perm -u+x | head -n 1)

mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
"$seeder" "$work/seeds"
# The fixed byte strings of the format, so mutations can restore them.
printf '%s\n' '"EBZA"' '"EBZF"' '"EBZI"' '"EBZE"' '"\x01\x00"' '"\x60\x00"' '"\x00\x01"' \
  >"$work/archive.dict"
marker="$work/.started"
touch "$marker"

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
echo "fuzz.sh: fuzzing for ${seconds}s; corpus $work/corpus, findings $work/artifacts"
set +e
nice -n 10 "$fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -max_len=16384 \
  -dict="$work/archive.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
  "$work/corpus" "$work/seeds" 2>&1 | tee "$work/fuzz.log"
status=${PIPESTATUS[0]}
set -e

findings=$(find "$work/artifacts" -type f -newer "$marker")
if [[ $status -ne 0 || -n $findings ]]; then
  echo "fuzz.sh: the fuzzer failed (exit status $status); findings:" >&2
  echo "${findings:-  (none written; see $work/fuzz.log)}" >&2
  echo "reproduce with: $fuzzer FILE" >&2
  exit 1
fi
echo "fuzz.sh: no findings"
