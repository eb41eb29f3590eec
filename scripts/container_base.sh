#!/usr/bin/env bash
# Builds a Debian 12 (bookworm) base image from Debian's own packages with
# debootstrap and imports it into podman under a local name, for machines
# that reach Debian's archive but no container registry. The Dockerfile then
# builds on it with --build-arg BASE=localhost/debian:bookworm.
#
#   scripts/container_base.sh [IMAGE]     (default localhost/debian:bookworm)
#
# Needs root (debootstrap). Installs podman, runc and debootstrap with
# apt-get when they are missing (scripts/install_deps.sh installs them too,
# for the container test). Does nothing when IMAGE exists already; set
# EBZIP_BASE_REBUILD=1 to build it again (e.g. for Debian's security updates).
# EBZIP_DEBIAN_MIRROR picks the archive (default http://deb.debian.org/debian).
set -euo pipefail
image=${1:-localhost/debian:bookworm}
mirror=${EBZIP_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [[ $(id -u) -ne 0 ]]; then
  echo "container_base: run as root (debootstrap needs it)" >&2
  exit 2
fi

missing=()
for p in podman runc debootstrap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "container_base: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if podman image exists "$image" && [[ ${EBZIP_BASE_REBUILD:-0} != 1 ]]; then
  echo "container_base: $image exists (EBZIP_BASE_REBUILD=1 builds it again)"
  exit 0
fi

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
# minbase: essential packages and apt only, as in Debian's -slim images.
debootstrap --variant=minbase bookworm "$rootfs" "$mirror"
# The same archive and security updates that Debian's images list, and no
# package lists or caches in the image.
cat > "$rootfs/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
tar --numeric-owner -C "$rootfs" -c . |
  podman import --change 'CMD ["/bin/bash"]' \
    --message "debootstrap --variant=minbase bookworm $mirror" - "$image"
echo "container_base: imported $image"
