#!/usr/bin/env bash
# `make run`: ebzipd in the foreground, the GPU backend when a GPU is
# visible and the CPU backend otherwise. Flags pass through; every flag can
# also be set as EBZIPD_<FLAG> (see `ebzipd --helpfull`). Ctrl-C drains and stops.
set -euo pipefail
build=${1:-build}
shift || true
cat >&2 <<MSG
ebzipd: gRPC on ${EBZIPD_LISTEN:-0.0.0.0:50051}, Prometheus metrics on ${EBZIPD_METRICS_LISTEN:-0.0.0.0:9464}/metrics
try:    $build/client/cli/ebzip health --server localhost:50051
        $build/client/cli/ebzip compress --rel 1e-4 /usr/share/ferret-vis/data/etopo5.cdf:ROSE -o etopo5.ebz --server localhost:50051
MSG
exec "$build/server/ebzipd" "$@"
