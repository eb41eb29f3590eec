#!/usr/bin/env bash
# Prints, one per line, the distribution packages that own the shared
# libraries BINARY... load: what the Dockerfile's runtime stage installs, so
# that it carries no -dev package and the list cannot drift from the build.
# The NVIDIA driver's libraries (libcuda, libnvidia-*), which the NVIDIA
# container toolkit mounts at run time, are left out. Fails if some other
# library has no owning package: the runtime stage is plain Debian, so a CUDA
# runtime (libcudart) loaded as a shared library is an error; the GPU codec
# links it statically.
#
#   scripts/runtime_packages.sh build/server/ebzipd build/client/cli/ebzip \
#       build/client/cli/ebzip-*.so
set -euo pipefail
if [[ $# -eq 0 ]]; then
  echo "usage: $0 BINARY..." >&2
  exit 2
fi

# Mounted by the NVIDIA container toolkit with the driver.
from_driver='^(libcuda\.so|libnvidia-)'

libs=$(ldd "$@" | awk '$2 == "=>" { print $1, $3 }' | sort -u)
if grep -q ' not$' <<<"$libs" || ldd "$@" | grep -q 'not found'; then
  echo "runtime_packages: unresolved libraries:" >&2
  ldd "$@" | grep 'not found' >&2
  exit 1
fi

packages=()
while read -r name path; do
  [[ $name =~ $from_driver ]] && continue
  # dpkg knows the path it installed, which may differ from ldd's by the
  # /usr merge (/lib vs /usr/lib): try both.
  owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null ||
          dpkg -S "/usr$path" 2>/dev/null || true)
  if [[ -z $owner ]]; then
    echo "runtime_packages: no package owns $path ($name)" >&2
    if [[ $name == libcudart* ]]; then
      echo "runtime_packages: link the CUDA runtime statically (CUDA::cudart_static)" >&2
    fi
    exit 1
  fi
  packages+=("${owner%%:*}")
done <<<"$libs"
printf '%s\n' "${packages[@]}" | sort -u
