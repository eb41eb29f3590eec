#!/usr/bin/env bash
# Installs the Debian packages ebzip builds, tests and demonstrates with,
# skipping those already present. Safe to run repeatedly.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config python3
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libnetcdf-dev libhdf5-dev
  ferret-datasets zfp
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc prometheus-cpp-dev
  python3-grpcio python3-protobuf python3-numpy prometheus openssl
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi
echo "install_deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
