#!/usr/bin/env bash
# The Dockerfile passes the linter (tests/deploy/dockerfile_lint), and the
# linter catches each kind of mistake it is there for: every mutation below
# must make it fail. Then scripts/runtime_packages.sh, which picks the
# runtime stage's packages, is checked on the binaries built here.
#
#   tests/deploy/dockerfile_test.sh [EBZIPD EBZIP]
# Exit 77 (skipped) when node or the linter's packages are missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lint=$root/tests/deploy/dockerfile_lint
if ! command -v node >/dev/null || [[ ! -d $lint/node_modules/dockerfile-utils ]]; then
  echo "SKIP: node or $lint/node_modules missing (scripts/install_deps.sh installs them)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

node "$lint/lint.mjs" "$root/Dockerfile"
echo "ok: Dockerfile is clean"

# mutate NAME SED-EXPRESSION: the edited Dockerfile must fail the lint.
failures=0
mutate() {
  local name=$1 expr=$2
  sed -e "$expr" "$root/Dockerfile" > "$work/Dockerfile"
  if cmp -s "$root/Dockerfile" "$work/Dockerfile"; then
    echo "FAIL: mutation '$name' changed nothing (the test is stale)"; failures=$((failures + 1)); return
  fi
  if node "$lint/lint.mjs" "$work/Dockerfile" > "$work/out"; then
    echo "FAIL: lint passed a Dockerfile with '$name'"; failures=$((failures + 1))
  else
    echo "ok: '$name' caught: $(head -1 "$work/out")"
  fi
}
mutate "misspelt instruction" 's/^RUN apt-get update/RUNN apt-get update/'
mutate "bad healthcheck duration" 's/--interval=15s/--interval=15/'
mutate "root user" 's/^USER .*/USER root/'
mutate "no user" '/^USER /d'
mutate "Ubuntu base" 's/^ARG BASE=debian:bookworm-slim/ARG BASE=ubuntu:24.04/'
mutate "CUDA image at run time" 's|^FROM ${BASE} AS runtime|FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04 AS runtime|'
mutate "CUDA image to build in" 's|^FROM ${BASE} AS build|FROM nvidia/cuda:13.0.0-devel-ubuntu24.04 AS build|'
mutate "-dev package at run time" 's/xargs -a \/tmp\/runtime-packages.txt apt-get install -y/apt-get install -y libgrpc++-dev/'
mutate "CUDA package at run time" 's/xargs -a \/tmp\/runtime-packages.txt apt-get install -y/apt-get install -y cuda-cudart-13-0/'
mutate "toolkit copied into the image" '/^COPY --from=build \/out\/lib/a COPY --from=cuda /usr/local/cuda/lib64/ /usr/local/lib/'
mutate "build packages not from install_deps.sh" 's/EBZIP_DEPS=build scripts\/install_deps.sh/apt-get install -y g++/'
mutate "no healthcheck" '/^HEALTHCHECK/,/^  CMD/d'
mutate "metrics port not exposed" 's/^EXPOSE 50051 9464/EXPOSE 50051/'
mutate "shell-form entrypoint" 's|^ENTRYPOINT .*|ENTRYPOINT /usr/local/bin/ebzipd|'
mutate "build not by README's steps" 's/make build BUILD/cmake --build BUILD/'
mutate "no OCI version label" '/org.opencontainers.image.version/d'

# runtime_packages.sh refuses a binary that loads a CUDA runtime no Debian
# package owns: the runtime stage is plain Debian, and the GPU build links
# the CUDA runtime statically. A stand-in libcudart shows the refusal.
if command -v g++ >/dev/null; then
  echo 'int cudart_stand_in() { return 0; }' | g++ -shared -fPIC -x c++ - -o "$work/libcudart.so.13"
  echo 'int cudart_stand_in(); int main() { return cudart_stand_in(); }' |
    g++ -x c++ - -o "$work/loads_cudart" -L"$work" -l:libcudart.so.13 -Wl,-rpath,"$work"
  if "$root/scripts/runtime_packages.sh" "$work/loads_cudart" > "$work/out" 2>&1; then
    echo "FAIL: runtime_packages.sh accepted a binary that loads libcudart"; failures=$((failures + 1))
  elif ! grep -q 'statically' "$work/out"; then
    echo "FAIL: runtime_packages.sh refused libcudart without saying why: $(cat "$work/out")"
    failures=$((failures + 1))
  else
    echo "ok: a shared libcudart is refused: $(tail -1 "$work/out")"
  fi
fi

if [[ $# -ge 2 ]]; then
  pkgs=$("$root/scripts/runtime_packages.sh" "$@")
  if grep -E -- '-dev$' <<<"$pkgs"; then
    echo "FAIL: runtime_packages.sh lists development packages"; failures=$((failures + 1))
  fi
  for want in 'libgrpc\+\+' 'libprotobuf[0-9]' 'libprometheus-cpp-pull' 'libabsl'; do
    if ! grep -Eq "^$want" <<<"$pkgs"; then
      echo "FAIL: runtime_packages.sh misses $want (ebzipd loads it)"; failures=$((failures + 1))
    fi
  done
  echo "ok: runtime packages: $(tr '\n' ' ' <<<"$pkgs")"
fi
exit $((failures > 0))
