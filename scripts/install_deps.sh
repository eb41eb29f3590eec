#!/usr/bin/env bash
# Installs the Debian packages ebzip builds, tests and demonstrates with,
# skipping those already present. Safe to run repeatedly.
#
#   EBZIP_DEPS=all    (default) everything `make test` and `make demo` need,
#                     plus the npm tools the deploy/ checks use
#   EBZIP_DEPS=build  only what building ebzipd and ebzip needs (the
#                     Dockerfile's build stage; works on Ubuntu too)
set -euo pipefail
cd "$(dirname "$0")/.."

build_packages=(
  make cmake ninja-build g++ pkg-config
  libabsl-dev libnetcdf-dev libhdf5-dev nlohmann-json3-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc prometheus-cpp-dev
  nlohmann-json3-dev
)
test_packages=(
  python3 libgtest-dev libgmock-dev libbenchmark-dev
  ferret-datasets zfp
  python3-grpcio python3-protobuf python3-numpy python3-yaml prometheus openssl
  # ncdump and h5dump read back the NetCDF-4/HDF5 files `ebzip decompress` writes.
  netcdf-bin hdf5-tools
  yamllint
  # The Python package's in-process codec (pybind11) and what docs/python.md
  # and its tests use it with.
  pybind11-dev python3-dev python3-netcdf4
  python3-numcodecs python3-zarr python3-xarray python3-dask python3-distributed
  # The container test (tests/deploy/container_test.py).
  podman runc debootstrap
  # The HDF5 filter plugin's tests: h5py, h5dump, nccopy and ncdump.
  python3-h5py hdf5-tools netcdf-bin
)

packages=("${build_packages[@]}")
case "${EBZIP_DEPS:-all}" in
  build) ;;
  all) packages+=("${test_packages[@]}") ;;
  *) echo "install_deps: EBZIP_DEPS must be 'all' or 'build'" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    sudo="sudo"
  fi
  echo "install_deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Dockerfile linter (a real Dockerfile parser, from the npm registry:
# no Debian package parses Dockerfiles). Pinned by its package-lock.json.
lint=tests/deploy/dockerfile_lint
if [[ ${EBZIP_DEPS:-all} == all && ! -d $lint/node_modules ]]; then
  if command -v npm >/dev/null; then
    npm ci --prefix "$lint" --no-audit --no-fund --loglevel=error
  else
    echo "install_deps: npm not found; the Dockerfile lint test will be skipped" >&2
  fi
fi
