# shellcheck shell=bash
# Sourced by the service benchmarks: sets the arrays `ebzipd` and `load` to
# the commands that run ebzipd and ebzip_load, from $EBZIP_RUN (a launcher
# prefix, e.g. a ../shared/tools/bundle directory's "bundle/run") or from
# the build directory $1.
find_binaries() {
  local build=$1
  if [[ -n ${EBZIP_RUN:-} ]]; then
    read -r -a launcher <<< "$EBZIP_RUN"
    ebzipd=("${launcher[@]}" ebzipd)
    load=("${launcher[@]}" ebzip_load)
    return
  fi
  ebzipd=("$build/server/ebzipd")
  load=("$build/bench/ebzip_load")
  for b in "${ebzipd[0]}" "${load[0]}"; do
    [[ -x $b ]] || { echo "missing $b: cmake --build $build --target ebzipd ebzip_load" >&2; exit 2; }
  done
}
