#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of sumcache from Debian's
# packages. Skips what is already installed; safe to run again.
set -euo pipefail

packages=(
  build-essential cmake pkg-config clang libfuzzer-14-dev
  libevent-dev libcurl4-openssl-dev libxxhash-dev libssl-dev
  libprotobuf-c-dev protobuf-c-compiler libconfig-dev libcriterion-dev
  nginx-light squid wrk curl procps iproute2 util-linux gnuplot-nox
  binutils systemd yamllint python3-yaml
  chromium fonts-dejavu-core openssl python3 libnss3-tools
  tcpdump mandoc dpkg-dev lintian
)

# Debian starts the daemons it installs (and a reboot starts them again);
# sumcache's tests, quickstart and benchmarks run their own nginx and Squid
# with their own configs, so the system copies must not hold port 3128 (the
# Squid package's default, and ours) or port 80.
stop_system_daemons() {
  for svc in nginx squid; do
    if command -v systemctl >/dev/null &&
       systemctl is-active --quiet "$svc" 2>/dev/null; then
      $SUDO systemctl stop "$svc" || true
      $SUDO systemctl disable "$svc" >/dev/null 2>&1 || true
    fi
    if [ -s "/run/$svc.pid" ]; then
      $SUDO kill "$(cat "/run/$svc.pid")" 2>/dev/null || true
    fi
  done
}

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
    missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  stop_system_daemons
  echo "bootstrap: all ${#packages[@]} packages present"
  exit 0
fi

echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# One index refresh per run; install fails loudly if a package cannot be had.
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

stop_system_daemons
echo "bootstrap: done"
