#!/usr/bin/env bash
# A clean Debian 12 root in a folder, standing in for a robot's fresh Raspberry Pi OS / Debian 12
# (test/test_robot_install.py; root only). What a robot's owner has before `make robot` is
# already there: git, make, ca-certificates, sudo and an SSH server installed, and a user `pi`
# who may sudo without a password (as on Raspberry Pi OS).
#
#   scripts/robot_root.sh base      the cached base root (debootstrap --variant=minbase bookworm),
#                                   built once: prints the path of its tarball
#   scripts/robot_root.sh new DIR   DIR becomes a fresh root unpacked from that tarball, with this
#                                   machine's apt sources and resolver
#
# The cache is ${XDG_CACHE_HOME:-~/.cache}/netloop/robot-root/ (the tarball, and apt's downloaded
# packages, which the test binds into each root's /var/cache/apt/archives). The Debian mirror is
# the one this machine's apt uses (NETLOOP_DEBIAN_MIRROR overrides it).
set -euo pipefail
cache=$(realpath -m "${XDG_CACHE_HOME:-$HOME/.cache}/netloop/robot-root")
# Bump when the included packages change: an old tarball is not reused.
base_version=3
tarball="$cache/bookworm-minbase-v$base_version.tar"
include=git,make,ca-certificates,openssh-server,procps,sudo

die() { echo "robot_root: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot)"

mirror() {
  if [ -n "${NETLOOP_DEBIAN_MIRROR:-}" ]; then echo "$NETLOOP_DEBIAN_MIRROR"; return; fi
  local uri
  uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)[[:space:]]*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
  [ -n "$uri" ] || uri=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\/debian\)[[:space:]]\+bookworm[[:space:]].*/\2/p' \
                         /etc/apt/sources.list 2>/dev/null | head -1)
  [ -n "$uri" ] || die "no Debian mirror found in this machine's apt sources: set NETLOOP_DEBIAN_MIRROR"
  echo "$uri"
}

base() {
  if [ -f "$tarball" ]; then echo "$tarball"; return; fi
  command -v debootstrap >/dev/null || {
    echo "robot_root: installing debootstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2
  }
  mkdir -p "$cache"
  local tmp
  tmp=$(mktemp -d "$cache/build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "robot_root: debootstrap --variant=minbase bookworm (once; about 30 s)" >&2
  debootstrap --variant=minbase --include="$include" bookworm "$tmp/root" "$(mirror)" > "$cache/debootstrap.log" 2>&1 ||
    { tail -20 "$cache/debootstrap.log" >&2; die "debootstrap failed; log: $cache/debootstrap.log"; }
  rm -f "$tmp/root/etc/ssh/ssh_host_"*     # each robot root gets its own host keys (the test's)
  chroot "$tmp/root" useradd --create-home --shell /bin/bash pi
  chroot "$tmp/root" usermod -p '*' pi     # no password, but not locked (sshd refuses locked accounts)
  echo "pi ALL=(ALL) NOPASSWD: ALL" > "$tmp/root/etc/sudoers.d/pi"
  chmod 440 "$tmp/root/etc/sudoers.d/pi"
  rm -f "$cache"/bookworm-minbase-v*.tar   # older bases
  tar -C "$tmp/root" -cf "$tmp/base.tar" .
  mv "$tmp/base.tar" "$tarball"
  rm -rf "$tmp"
  trap - EXIT
  echo "$tarball"
}

new() {
  local dir=$1
  [ -n "$dir" ] || die "usage: scripts/robot_root.sh new DIR"
  [ ! -e "$dir" ] || [ -z "$(ls -A "$dir")" ] || die "$dir exists and is not empty"
  local tar
  tar=$(base)
  mkdir -p "$dir"
  tar -C "$dir" -xf "$tar"
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  grep -qs "[[:space:]]$(hostname)\$" "$dir/etc/hosts" || echo "127.0.1.1 $(hostname)" >> "$dir/etc/hosts"  # sudo looks it up
  # the same apt sources as this machine (bookworm, its updates and security)
  rm -f "$dir/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/debian.sources "$dir/etc/apt/sources.list.d/" 2>/dev/null ||
    cp /etc/apt/sources.list "$dir/etc/apt/sources.list"
  mkdir -p "$cache/apt-archives/partial"
}

case "${1:-}" in
  base) base ;;
  new) new "${2:-}" ;;
  *) die "usage: scripts/robot_root.sh base | new DIR" ;;
esac
