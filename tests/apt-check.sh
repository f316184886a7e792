#!/usr/bin/env bash
# apt through an intercepting node: a package repository of our own on
# nginx over HTTPS (a .deb made by dpkg-deb, its Packages and Release
# written here), and Debian's apt-get with Acquire::https::Proxy naming the
# node and Acquire::https::CaInfo naming the node's CA, as proxy/README.md
# tells. Run by tests/run.sh in both builds; BUILD names the build.
#   - `apt-get update` and `apt-get download` work through the node, and
#     the .deb is the one built (apt checks its SHA256 from Packages);
#   - a second download (the file removed, as on another machine) is a hit:
#     the origin saw the .deb once, the node logged an https:// hit;
#   - apt trusting only the system's CAs (not ours) fails the handshake,
#     and the node counts it (GnuTLS closes without an alert: "closed").
# Prints "apt-check: P passed, F failed".
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/checks.sh apt-check
. deploy/lib.sh

base=${APT_CHECK_PORT:-26128}
node_port=$base tls_port=$((base + 1))
work=$(pwd)/$dir
pids=()
finish() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap finish EXIT

# ---- the repository: one package, its index, a Release ----
repo=$work/repo
mkdir -p "$repo" "$work/pkg/DEBIAN" "$work/pkg/usr/share/doc/sumcache-apt-test"
cat >"$work/pkg/DEBIAN/control" <<EOF
Package: sumcache-apt-test
Version: 1.0
Architecture: all
Maintainer: sumcache tests <tests@sumcache.invalid>
Description: a package that apt fetches through an intercepting node
EOF
# some bulk, so a body is more than a few packets
head -c 200000 /dev/urandom >"$work/pkg/usr/share/doc/sumcache-apt-test/bulk"
dpkg-deb --build --root-owner-group "$work/pkg" \
  "$repo/sumcache-apt-test_1.0_all.deb" >/dev/null
(cd "$repo" && dpkg-scanpackages --multiversion . /dev/null 2>/dev/null >Packages)
{
  echo "Date: $(date -Ru)"
  echo "SHA256:"
  echo " $(sha256sum "$repo/Packages" | cut -d' ' -f1) $(stat -c %s "$repo/Packages") Packages"
} >"$repo/Release"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost \
  -keyout "$work/origin.key" -out "$work/origin.crt" 2>/dev/null
cat >"$work/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 64; }
http {
  access_log $work/nginx-access.log;
  root $repo;
  # a pool's files never change under one name
  add_header Cache-Control "max-age=3600";
  server {
    listen 127.0.0.1:$tls_port ssl;
    ssl_certificate $work/origin.crt;
    ssl_certificate_key $work/origin.key;
  }
}
EOF
nginx -p "$work" -c "$work/nginx.conf" &
pids+=($!)

# ---- the node: interception of localhost, with a CA of its own that
# may sign for localhost alone (apt, GnuTLS, takes its name constraints) ----
"$build/sumcache" --make-ca "$work/ca" --for localhost >/dev/null
"$build/sumcache" -o node_name=apt -o "http_listen=127.0.0.1:$node_port" \
  -o "access_log=$work/access.log" -o "connect_ports=$tls_port" \
  -o tls_intercept=localhost -o "tls_ca_cert=$work/ca/ca.crt" \
  -o "tls_ca_key=$work/ca/ca.key" -o "tls_upstream_ca=$work/origin.crt" \
  >"$work/node.out" 2>&1 &
pids+=($!)
wait_port "$tls_port" && wait_port "$node_port" || {
  cat "$work/nginx-error.log" "$work/node.out"
  echo "apt-check: 0 passed, 1 failed"; exit 1; }

# ---- apt, in directories of its own ----
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/dl"
echo "deb [trusted=yes] https://localhost:$tls_port/ ./" >"$work/sources.list"
touch "$work/status"
apt_in() {  # apt_in CAINFO apt-get ARGS...
  local cainfo=$1; shift
  (cd "$work/dl" && apt-get -q \
    -o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=- \
    -o "Dir::State::Lists=$work/lists" -o "Dir::State::status=$work/status" \
    -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root \
    -o Debug::NoLocking=1 -o Acquire::Languages=none \
    -o "Acquire::https::Proxy=http://127.0.0.1:$node_port" \
    -o "Acquire::https::CaInfo=$cainfo" "$@")
}
deb_gets() { grep -c 'GET /\(\./\)\?sumcache-apt-test_1.0_all.deb' "$work/nginx-access.log"; }
same_deb() {
  cmp "$work/dl/sumcache-apt-test_1.0_all.deb" \
    "$repo/sumcache-apt-test_1.0_all.deb"
}

check "apt-get update through the node (our CA in Acquire::https::CaInfo)" \
  apt_in "$work/ca/ca.crt" --error-on=any update
check "apt-get download through the node: the package built" \
  apt_in "$work/ca/ca.crt" download sumcache-apt-test
check "  the same bytes" same_deb
second() {
  rm -f "$work/dl/sumcache-apt-test_1.0_all.deb"
  apt_in "$work/ca/ca.crt" download sumcache-apt-test && same_deb
}
check "a second download (as from another machine) gets the same bytes" second
once() {
  echo "the origin was asked for the .deb $(deb_gets) times"
  cat "$work/nginx-access.log"
  [ "$(deb_gets)" -eq 1 ]
}
check "  the origin was asked for the .deb once" once
hit_logged() {
  for _ in $(seq 30); do
    grep -q "TCP_MEM_HIT/200 .* GET https://localhost:$tls_port/\(\./\)\?sumcache-apt-test_1.0_all.deb" \
      "$work/access.log" && return 0
    sleep 0.1
  done
  cat "$work/access.log"
  return 1
}
check "  the node logged an https:// hit for it" hit_logged
untrusted() {
  local before now
  before=$(metric_at "$node_port" 'sumcache_tls_handshakes_total{result="closed"}')
  rm -rf "$work/lists"/* && mkdir -p "$work/lists/partial"
  ! apt_in /etc/ssl/certs/ca-certificates.crt --error-on=any update \
    >"$work/untrusted.out" 2>&1 || return 1
  grep -i "certificate" "$work/untrusted.out" || return 1
  now=$(metric_at "$node_port" 'sumcache_tls_handshakes_total{result="closed"}')
  echo "handshakes closed by clients without a word: $before before, $now after"
  [ "$now" -gt "$before" ]
}
check "apt without our CA refuses the node's certificate (closing); the node counts it" untrusted
no_sanitizer_reports() {
  ! grep -l "ERROR: \(Address\|Leak\)Sanitizer\|runtime error:" "$work/node.out"
}
check "the node logged no sanitizer report" no_sanitizer_reports
checks_done apt-check
