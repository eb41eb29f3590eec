#!/usr/bin/env bash
# Builds the libFuzzer targets (with ASan and UBSan, so clang) and runs each
# for a bounded time on a corpus seeded with valid inputs:
#   archive_reader_fuzzer  the archive reader and every decoder (codec only)
#   grpc_fuzzer            a real ebzipd in the process, driven over loopback
#   metadata_fuzzer        the metadata document's reader (client/io)
#
#   scripts/fuzz.sh [SECONDS] [TARGET...] [LIBFUZZER_FLAGS...]
#
# SECONDS (default 60) is per target: `scripts/fuzz.sh 60` fuzzes the archive
# reader for 60 s, then ebzipd for 60 s, then the metadata reader for 60 s.
# TARGET (archive_reader_fuzzer, grpc_fuzzer or metadata_fuzzer, or
# archive_reader, grpc, metadata) picks targets; so does EBZIP_FUZZ_TARGETS
# (space- or comma-separated); by default all three run. Other arguments go
# to every target's libFuzzer.
#
# Exits 0 when every target ran without a finding, and non-zero when one
# reports a crash, a sanitizer error, a contract violation (see each target's
# comment), a timeout or running out of memory, or could not be built. The
# input that did it is left in that target's artifacts directory; rerun it
# with `TARGET FILE` (grpc_fuzzer: add -close_fd_mask=0 to see the server's
# logs, and EBZIP_GRPC_FUZZ_VERBOSE=1 for a line per call).
#
# Environment: EBZIP_FUZZ_BUILD (build directory, default build-fuzz),
# EBZIP_FUZZ_WORK (the archive reader's corpus, artifacts and log, default
# .fuzz/archive_reader), EBZIP_FUZZ_GRPC_WORK (the same for grpc_fuzzer,
# default .fuzz/grpc), EBZIP_FUZZ_METADATA_WORK (for metadata_fuzzer,
# default .fuzz/metadata), EBZIP_FUZZ_JOBS (build parallelism, default 2).
set -euo pipefail

usage() {
  echo "usage: $0 [SECONDS] [archive_reader_fuzzer|grpc_fuzzer|metadata_fuzzer...]" \
    "[LIBFUZZER_FLAGS...]" >&2
  exit 2
}
seconds=60
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
elif [[ $# -gt 0 && $1 != -* && $1 != archive_reader* && $1 != grpc* && $1 != metadata* ]]; then
  usage
fi
targets=()
flags=()
for arg in "$@"; do
  case $arg in
    archive_reader | archive_reader_fuzzer) targets+=(archive_reader_fuzzer) ;;
    grpc | grpc_fuzzer) targets+=(grpc_fuzzer) ;;
    metadata | metadata_fuzzer) targets+=(metadata_fuzzer) ;;
    -*) flags+=("$arg") ;;
    *) usage ;;
  esac
done
if [[ ${#targets[@]} -eq 0 ]]; then
  for t in ${EBZIP_FUZZ_TARGETS:-archive_reader_fuzzer grpc_fuzzer metadata_fuzzer}; do
    t=${t//,/ }
    for name in $t; do
      case $name in
        archive_reader | archive_reader_fuzzer) targets+=(archive_reader_fuzzer) ;;
        grpc | grpc_fuzzer) targets+=(grpc_fuzzer) ;;
        metadata | metadata_fuzzer) targets+=(metadata_fuzzer) ;;
        *)
          echo "fuzz.sh: unknown target \"$name\" in EBZIP_FUZZ_TARGETS" >&2
          exit 2
          ;;
      esac
    done
  done
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${EBZIP_FUZZ_BUILD:-$root/build-fuzz}
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
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
configure() {  # SOURCE_DIR BUILD_DIR
  mkdir -p "$2"
  CC=clang CXX=clang++ cmake -S "$1" -B "$2" "${generator[@]}" "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEBZIP_FUZZ=ON -DEBZIP_CUDA=OFF >"$2/configure.log" 2>&1
}
has_target() {  # BUILD_DIR TARGET
  # Not `| grep -q`: grep stops at the first match, and with pipefail the
  # SIGPIPE that cmake then gets would count as "no such target".
  local help
  help=$(cmake --build "$1" --target help 2>/dev/null) || return 1
  grep -q "^$2: " <<<"$help"
}

bin="$build"
if ! configure "$root" "$build" || ! has_target "$build" archive_reader_fuzzer; then
  # The archive reader needs only the codec: build tests/fuzz on its own when
  # the whole project does not configure with clang, or does not include
  # tests/fuzz yet. grpc_fuzzer needs the whole project, so it cannot run.
  echo "fuzz.sh: the project build has no fuzz targets (see $build/configure.log);" \
    "building tests/fuzz on its own, without grpc_fuzzer"
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

seeder_of() {  # TARGET: the program that writes its seed corpus
  case $1 in
    archive_reader_fuzzer) echo archive_seed_corpus ;;
    grpc_fuzzer) echo grpc_seed_corpus ;;
    metadata_fuzzer) echo metadata_seed_corpus ;;
  esac
}

# Which targets can be built here, with their corpus generators.
runnable=()
missing=()
build_targets=()
for t in "${targets[@]}"; do
  if has_target "$bin" "$t"; then
    runnable+=("$t")
    build_targets+=("$t" "$(seeder_of "$t")")
  else
    missing+=("$t")
  fi
done
if [[ ${#build_targets[@]} -gt 0 ]]; then
  nice -n 10 cmake --build "$bin" --target "${build_targets[@]}" -j "$jobs"
fi

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
failed=()
for t in "${runnable[@]}"; do
  fuzzer=$(find "$bin" -name "$t" -type f -perm -u+x | head -n 1)
  seeder=$(find "$bin" -name "$(seeder_of "$t")" -type f -perm -u+x | head -n 1)
  target_flags=()
  case $t in
    archive_reader_fuzzer)
      work=${EBZIP_FUZZ_WORK:-$root/.fuzz/archive_reader}
      mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
      # The fixed byte strings of the format, so mutations can restore them.
      printf '%s\n' '"EBZA"' '"EBZF"' '"EBZI"' '"EBZE"' '"\x01\x00"' '"\x60\x00"' '"\x00\x01"' \
        >"$work/archive.dict"
      target_flags=(-timeout=30 -rss_limit_mb=2048 -max_len=16384 -dict="$work/archive.dict")
      ;;
    grpc_fuzzer)
      work=${EBZIP_FUZZ_GRPC_WORK:-$root/.fuzz/grpc}
      mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts" "$work/internal"
      # Inputs whose calls ended INTERNAL (counted, not a crash: see the
      # target's comment).
      export EBZIP_GRPC_FUZZ_FINDINGS="$work/internal"
      # -timeout: an input runs at most three rounds of calls, each ending
      #   by its deadline (2 s at most), and the target itself aborts with a
      #   message when a call outlives its deadline by 5 s or the server is
      #   not idle 5 s after the last call: 60 s is only reached when the
      #   target is stuck where it cannot tell (a deadlock).
      # -rss_limit_mb: gRPC, ASan's quarantine (256 MiB) and the allocator's
      #   caches settle at 0.5-1 GiB; every budget of the server and of an
      #   input is a few MiB, so 2 GiB means memory that grows run after run.
      # -malloc_limit_mb: the server admits at most 4 MiB at once, and the
      #   target's own checks decode at most 64 MiB: one allocation past
      #   128 MiB is the server sizing something from a hostile header.
      # -max_len, -len_control=0: a plan of three rounds of three calls with
      #   a few actions each takes a few hundred bytes. libFuzzer would
      #   otherwise raise its length limit (from a few dozen bytes) only once
      #   coverage stalls, which the server's timing keeps it from doing.
      # -close_fd_mask=2: the server logs a JSON line for every call that
      #   ends DATA_LOSS, hundreds a second; libFuzzer, the sanitizers and
      #   the target write their reports to their own copies of stderr.
      target_flags=(-timeout=60 -rss_limit_mb=2048 -malloc_limit_mb=128 -max_len=4096
        -len_control=0 -close_fd_mask=2)
      ;;
    metadata_fuzzer)
      work=${EBZIP_FUZZ_METADATA_WORK:-$root/.fuzz/metadata}
      mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
      printf '%s\n' '"\"start\""' '"\"step\""' '"\"count\""' '"\"values\""' '"\"coordinates\""' \
        '"\"attributes\""' '"\"type\""' '"\"NaN\""' '"\"Infinity\""' >"$work/metadata.dict"
      # -malloc_limit_mb: the reader caps what a document's regular
      #   coordinates expand to at 524,288 values (4 MiB); anything past
      #   64 MiB in one allocation is the cap gone.
      target_flags=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=64 -max_len=8192
        -dict="$work/metadata.dict")
      ;;
  esac
  "$seeder" "$work/seeds"
  marker="$work/.started"
  touch "$marker"
  echo "fuzz.sh: fuzzing $t for ${seconds}s; corpus $work/corpus, findings $work/artifacts"
  set +e
  nice -n 10 "$fuzzer" -max_total_time="$seconds" "${target_flags[@]}" \
    -artifact_prefix="$work/artifacts/" -print_final_stats=1 "${flags[@]}" \
    "$work/corpus" "$work/seeds" 2>&1 | tee "$work/fuzz.log"
  status=${PIPESTATUS[0]}
  set -e
  findings=$(find "$work/artifacts" -type f -newer "$marker")
  if [[ $status -ne 0 || -n $findings ]]; then
    echo "fuzz.sh: $t failed (exit status $status); findings:" >&2
    echo "${findings:-  (none written; see $work/fuzz.log)}" >&2
    echo "reproduce with: $fuzzer FILE" >&2
    failed+=("$t")
  fi
  if [[ $t == grpc_fuzzer ]]; then
    internal=$(find "$work/internal" -type f -newer "$marker")
    if [[ -n $internal ]]; then
      echo "fuzz.sh: grpc_fuzzer: calls ended INTERNAL (not counted as a failure); inputs:" >&2
      echo "$internal" >&2
      echo "reproduce with: EBZIP_GRPC_FUZZ_ABORT_ON_INTERNAL=1 $fuzzer FILE" >&2
    fi
  fi
done

for t in "${missing[@]}"; do
  echo "fuzz.sh: $t could not be built (see $build/configure.log)" >&2
  failed+=("$t")
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: no findings (${runnable[*]})"
