# shellcheck shell=bash
# Sourced by the service benchmarks: sets the arrays `ebzipd` and `load` to
# the commands that run ebzipd and ebzip_load, and `limits` to the one that
# runs ebzip_transfer_limits, from $EBZIP_RUN (a launcher prefix, e.g. a
# bundle directory's "bundle/run", bench/README.md) or from the build
# directory $1. ebzipd and ebzip_load must be there; ebzip_transfer_limits
# is optional (the scripts say when it is missing and go on without it):
# `limits_missing` then says why.
find_binaries() {
  local build=$1
  limits_missing=
  if [[ -n ${EBZIP_RUN:-} ]]; then
    read -r -a launcher <<< "$EBZIP_RUN"
    ebzipd=("${launcher[@]}" ebzipd)
    load=("${launcher[@]}" ebzip_load)
    limits=("${launcher[@]}" ebzip_transfer_limits)
    return
  fi
  ebzipd=("$build/server/ebzipd")
  load=("$build/bench/ebzip_load")
  limits=("$build/bench/ebzip_transfer_limits")
  for b in "${ebzipd[0]}" "${load[0]}"; do
    [[ -x $b ]] || { echo "missing $b: cmake --build $build --target ebzipd ebzip_load" >&2; exit 2; }
  done
  if [[ ! -x ${limits[0]} ]]; then
    # shellcheck disable=SC2034  # read by the scripts that source this file
    limits_missing="missing ${limits[0]} (cmake --build $build --target ebzip_transfer_limits)"
  fi
}
