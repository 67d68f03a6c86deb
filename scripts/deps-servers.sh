#!/usr/bin/env bash
# deps-servers.sh — installs the real servers that baton's tests and benchmarks
# start on loopback: Ceph RADOS Gateway on a one-node memstore cluster
# (radosgw, ceph-mon, ceph-osd, ceph-common; see REFERENCE.md §12) and nginx.
#
# Owns: nothing but the apt-get call. Idempotent: packages already installed
# (per dpkg-query) are skipped; with nothing missing it does not touch apt.
# Debian/Ubuntu only; needs root (or sudo). Usage: scripts/deps-servers.sh
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

# Installed state of one package: 0 if "install ok installed".
is_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

ceph_pkgs=(radosgw ceph-mon ceph-osd ceph-common)
missing=()
for p in "${ceph_pkgs[@]}"; do
    is_installed "$p" || missing+=("$p")
done

# nginx: nginx-light (Debian 12) or plain nginx both provide /usr/sbin/nginx.
nginx_pkg=
if ! is_installed nginx-light && ! is_installed nginx && ! is_installed nginx-core; then
    nginx_pkg=nginx-light
fi

if [ "${#missing[@]}" -eq 0 ] && [ -z "$nginx_pkg" ]; then
    echo "deps-servers: all server packages already installed"
    exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "deps-servers: need root or sudo" >&2; exit 1; }
    SUDO="sudo -E"
fi

# Refresh the package lists only when they are absent or older than a day.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -n 1)" ]; then
    $SUDO apt-get update -q
fi

if [ -n "$nginx_pkg" ] && ! apt-cache show nginx-light >/dev/null 2>&1; then
    nginx_pkg=nginx   # releases without nginx-light
fi

echo "deps-servers: installing ${missing[*]} ${nginx_pkg}"
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" $nginx_pkg
echo "deps-servers: done"
