#!/bin/bash
# A Debian root file system with a real systemd for the systemd tier (test/systemd): the test boots it
# with systemd-nspawn, installs Boxmaker inside by the ```sh blocks of docs/operations.md, and starts
# boxmaker.target. Built with debootstrap from Debian's packages: minbase plus systemd and what the
# install section lists as prerequisites (curl, bubblewrap, git: installed here so the docs'
# `apt-get install` line finds them present and the tier needs no package download per run), sudo (the
# blocks are run by a user who may use sudo) and libgomp1 (llama-server's OpenMP runtime).
#
# Idempotent: once built, a run only prints the path. First run: about 2 minutes.
# Needs root (debootstrap, and the test's systemd-nspawn); as root it installs debootstrap and
# systemd-container from Debian when they are missing.
# Cache: $BOXMAKER_SYSTEMD_CACHE (default ~/.cache/boxmaker-systemd), one folder per recipe (its name
# carries a hash of the suite and packages), outside any checkout so every clone (and CI) reuses it.
# The test boots the cached tree read-only under an overlay, so a run never changes it.
# When the machine cannot build it, the one-line reason is left in $CACHE/unavailable and the script
# exits 1; the test then skips with that line (test/systemd/container.ts).
# Output: ROOTFS=…  (--check: the same when built, else exit 3 without building)
set -euo pipefail
SUITE=${BOXMAKER_SYSTEMD_SUITE:-bookworm}
MIRROR=${BOXMAKER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES=systemd,systemd-sysv,dbus,sudo,libgomp1,curl,bubblewrap,git
CACHE=${BOXMAKER_SYSTEMD_CACHE:-$HOME/.cache/boxmaker-systemd}
RECIPE=$(printf '%s %s v1' "$SUITE" "$PACKAGES" | sha256sum | cut -c1-12)
DIR=$CACHE/$SUITE-$RECIPE
log() { echo "systemd tier rootfs: $*" >&2; }
unavailable() {
  trap - ERR
  mkdir -p "$CACHE"
  echo "$*" >"$CACHE/unavailable"
  log "$*"
  exit 1
}
# Any other failure too leaves its reason, so the test can say why it skips.
trap 'unavailable "scripts/systemd-tier/build-rootfs.sh failed at line $LINENO"' ERR

if [ -f "$DIR/rootfs/.boxmaker-rootfs" ]; then
  rm -f "$CACHE/unavailable"
  echo "ROOTFS=$DIR/rootfs"
  exit 0
fi
# --check (the test): only say whether it is built.
[ "${1:-}" != --check ] || exit 3

[ "$(id -u)" = 0 ] || unavailable "needs root (debootstrap, systemd-nspawn)"
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v systemd-nspawn >/dev/null || need+=(systemd-container)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; } ||
    unavailable "apt-get install ${need[*]} failed"
fi

mkdir -p "$DIR"
# A half-built tree from an interrupted run is never used: it is built under another name and renamed.
rm -rf "$DIR/rootfs.part"
log "debootstrap $SUITE (about 2 minutes, once)"
start=$(date +%s)
if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$DIR/rootfs.part" "$MIRROR" >"$DIR/debootstrap.log" 2>&1; then
  rm -rf "$DIR/rootfs.part"
  unavailable "debootstrap $SUITE from $MIRROR failed: $(tail -n 1 "$DIR/debootstrap.log")"
fi
R=$DIR/rootfs.part
# sudo resolves the host name on every call; the copied host's name is not in the tree's /etc/hosts.
echo boxmaker-tier >"$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tboxmaker-tier\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$R/etc/hosts"
# An empty machine-id: each boot gets its own, as a fresh install would.
: >"$R/etc/machine-id"
chroot "$R" apt-get clean
touch "$R/.boxmaker-rootfs"
mv "$R" "$DIR/rootfs"
rm -f "$CACHE/unavailable"
log "built in $(($(date +%s) - start)) s: $DIR/rootfs ($(du -sh "$DIR/rootfs" | cut -f1))"
echo "ROOTFS=$DIR/rootfs"
