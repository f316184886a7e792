#!/usr/bin/env bash
# Real browsers through a real cluster: Debian's Chromium, headless, driven
# over the DevTools protocol (tests/browser/cdp.py), a 3-node summary
# cluster from deploy/cluster.sh, and nginx as the origin (HTTP, and HTTPS
# with a certificate made for the run). Run by tests/run.sh in both builds;
# BUILD names the build directory.
#   - a page of five parts (HTML, CSS, a script, an SVG and a PNG) loads
#     through node n1: every part arrives, through n1, and works (the
#     script ran, both images decoded, the stylesheet's colour applies);
#   - once n1's summary reaches n2, the same page through n2 (a new
#     profile, so nothing from a browser cache) loads whole, and n2's
#     access log and metrics show every part as a remote hit from n1
#     (CD_SIBLING_HIT), which n1's log and metrics show it served;
#   - an HTTPS page loads through a CONNECT tunnel of n1 when the browser
#     trusts the test key, and fails when it does not (the tunnel does not
#     touch the TLS);
#   - with interception on for "localhost" (the CA in Chromium's NSS db,
#     as proxy/README.md tells), the HTTPS page through n1 loads whole, its
#     parts cached as https:// URLs; through n2 (a new profile) every part
#     is a remote hit from n1, over the peer link; a browser without the
#     CA refuses n2's certificate and n2 counts it;
#   - /sumcache/status of every node renders with the cluster's data, in
#     the browser's own terms (tables, charts with points, refreshes), and
#     every number on it that /metrics also shows agrees with /metrics;
#   - the page asks nothing of anyone but its node, and no node logged a
#     sanitizer report.
# Screenshots of each page are kept in $BUILD/browser-check/.
# Prints "browser-check: P passed, F failed".
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/checks.sh browser-check

# below Linux's ephemeral range (32768+), where a port may be some
# connection's local end and refuse a listener (it did, once, in CI)
base=${BROWSER_CHECK_PORT:-25128}   # nodes base..base+2, origins above
http_port=$((base + 5000)) tls_port=$((base + 5001))
demo_port=$((base + 5002))          # cluster.sh's demo origin, unused here
cluster=$(pwd)/$dir/cluster
site=$(pwd)/$dir/site
pids=()
export SUMCACHE_BUILD=$build SUMCACHE_CLUSTER_DIR=$cluster \
  SUMCACHE_BASE_PORT=$base SUMCACHE_ORIGIN_PORT=$demo_port \
  SUMCACHE_NODE_CONF="connect_ports = [443, $tls_port];
status_interval = \"1s\";
tls_intercept = [\"localhost\"];
tls_ca_cert = \"$(pwd)/$dir/ca/ca.crt\";
tls_ca_key = \"$(pwd)/$dir/ca/ca.key\";
tls_upstream_ca = \"$(pwd)/$dir/origin.crt\";"
finish() {
  ./deploy/cluster.sh down >/dev/null 2>&1
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap finish EXIT

# ---- origin: nginx serving tests/browser/site over HTTP and HTTPS ----
cp -r tests/browser/site "$site"
python3 - "$site/img/tiles.png" <<'EOF'
# a 160x160 checkerboard PNG, written by hand: no image tools needed
import struct, sys, zlib
w = h = 160
rows = b"".join(b"\0" + b"".join(
    bytes((30, 136, 229) if (x // 20 + y // 20) % 2 else (244, 160, 0))
    for x in range(w)) for y in range(h))
def chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data)))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
       chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
open(sys.argv[1], "wb").write(png)
EOF
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout "$dir/origin.key" \
  -out "$dir/origin.crt" 2>/dev/null
# the nodes' interception CA: https://localhost/ is intercepted,
# https://127.0.0.1/ tunnelled; it may sign for localhost alone (Chromium
# takes its name constraints)
"$build/sumcache" --make-ca "$(pwd)/$dir/ca" --for localhost >/dev/null
spki=$(openssl x509 -in "$dir/origin.crt" -pubkey -noout |
  openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $(pwd)/$dir/nginx.pid;
error_log $(pwd)/$dir/nginx-error.log warn;
events { worker_connections 64; }
http {
  include /etc/nginx/mime.types;
  access_log $(pwd)/$dir/nginx-access.log;
  root $site;
  add_header Cache-Control "max-age=3600";
  server { listen 127.0.0.1:$http_port; }
  server {
    listen 127.0.0.1:$tls_port ssl;
    ssl_certificate $(pwd)/$dir/origin.crt;
    ssl_certificate_key $(pwd)/$dir/origin.key;
  }
}
EOF
nginx -p "$(pwd)/$dir" -c "$(pwd)/$dir/nginx.conf" &
pids+=($!)
. deploy/lib.sh
wait_port "$http_port" && wait_port "$tls_port" || {
  cat "$dir/nginx-error.log"; echo "browser-check: 0 passed, 1 failed"; exit 1; }

# each node with a disk tier, empty at every run
export SUMCACHE_CACHE_ROOT=$cluster-cache
rm -rf "$SUMCACHE_CACHE_ROOT"
./deploy/cluster.sh up 3 --origin-latency 0 --cache-dir 32MB \
  >"$dir/cluster.out" 2>&1 || {
  cat "$dir/cluster.out"; echo "browser-check: 0 passed, 1 failed"; exit 1; }
node_port() { echo $((base + ${1#n} - 1)); }

# browse NAME [cdp.py options] URL: the report in $dir/NAME.json, the
# screenshot in $dir/NAME.png
browse() {
  local name=$1; shift
  python3 tests/browser/cdp.py --screenshot "$dir/$name.png" "$@" \
    >"$dir/$name.json"
}
# metric NODE SERIES: its value in the node's /metrics (0 if absent)
metric() { metric_at "$(node_port "$1")" "$2"; }
# report NAME PYTHON-EXPR: true when the expression holds of the report r
report() {
  python3 - "$dir/$1.json" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
ok = eval(sys.argv[2])
if not ok:
    json.dump(r, sys.stdout, indent=1)
sys.exit(0 if ok else 1)
EOF
}
page=http://127.0.0.1:$http_port/index.html
parts=5  # index.html, style.css, app.js, img/rings.svg, img/tiles.png
works='document.body.dataset.script === "ran" &&
  document.body.dataset.images === "vector:160,raster:160" &&
  document.body.dataset.h1 === "rgb(30, 136, 229)"'
# every part answered 200 through PORT (not from the browser's cache), and
# the page's script says it works
whole() {
  echo "(r['eval'] is True and not r['failed'] and len(r['responses']) == $parts and
    all(x['status'] == 200 and x['connected_to'] == '127.0.0.1:$1' and
        not x['from_cache'] for x in r['responses']))"
}

# ---- a page of five parts through n1, then through n2 ----
check "page through n1: all $parts parts arrive through n1 and work" \
  browse page-n1 --proxy "127.0.0.1:$(node_port n1)" --eval "$works" "$page"
check "  (the report says so)" report page-n1 "$(whole "$(node_port n1)")"
wait_summary() {  # wait_summary N: until n2 holds n1's summary of N entries
  for _ in $(seq 100); do
    [ "$(metric n2 'sumcache_peer_summary_entries{peer="n1"}')" -ge "$1" ] &&
      return 0
    sleep 0.1
  done
  echo "n2 never held n1's summary of $1 entries"
  return 1
}
check "n1's summary reaches n2" wait_summary "$parts"
remote_before=$(metric n2 'sumcache_requests_total{result="remote_hit"}')
check "page through n2 (new profile): all $parts parts arrive and work" \
  browse page-n2 --proxy "127.0.0.1:$(node_port n2)" --eval "$works" "$page"
check "  (the report says so)" report page-n2 "$(whole "$(node_port n2)")"
sibling_hits() {
  local n
  n=$(grep -c " GET http://127.0.0.1:$http_port/.* CD_SIBLING_HIT/n1 " \
    "$cluster/n2.access.log")
  echo "n2 logged $n of $parts parts as CD_SIBLING_HIT from n1"
  cat "$cluster/n2.access.log"
  [ "$n" -eq "$parts" ]
}
check "n2's access log: every part a remote hit from n1 (CD_SIBLING_HIT/n1)" sibling_hits
remote_hits() {
  local now
  now=$(metric n2 'sumcache_requests_total{result="remote_hit"}')
  echo "n2 remote hits: $remote_before before, $now after"
  [ $((now - remote_before)) -eq "$parts" ] &&
    [ "$(metric n2 'sumcache_peer_remote_hits_total{peer="n1"}')" -eq "$parts" ]
}
check "n2's metrics: $parts remote hits, all from n1" remote_hits
served_by_n1() {
  local logged served
  logged=$(grep -c " TCP_MEM_HIT/200 .* http://127.0.0.1:$http_port/" \
    "$cluster/n1.access.log")
  served=$(metric n1 'sumcache_peer_requests_served_total{result="hit"}')
  echo "n1 logged $logged memory hits and counted $served served to peers"
  cat "$cluster/n1.access.log"
  [ "$logged" -eq "$parts" ] && [ "$served" -eq "$parts" ]
}
check "n1 served them from its cache to n2 (log and metrics)" served_by_n1
check "the origin saw each part once" \
  test "$(grep -c '"GET /' "$dir/nginx-access.log")" -eq "$parts"

# ---- HTTPS through a CONNECT tunnel ----
tls_page=https://127.0.0.1:$tls_port/index.html
tunnels_before=$(metric n1 sumcache_tunnels_total)
check "HTTPS page through n1's CONNECT tunnel (test key trusted)" \
  browse https-n1 --proxy "127.0.0.1:$(node_port n1)" --spki-trust "$spki" \
    --eval "$works" "$tls_page"
check "  every part over TLS, through n1" report https-n1 \
  "$(whole "$(node_port n1)") and all(x['url'].startswith('https://') for x in r['responses'])"
tunnel_logged() {
  local t
  t=$(metric n1 sumcache_tunnels_total)
  echo "tunnels: $tunnels_before before, $t after"
  [ "$t" -gt "$tunnels_before" ] || return 1
  # a tunnel is logged when it closes, and the log is flushed every 250 ms
  for _ in $(seq 50); do
    grep " TCP_TUNNEL/200 .* CONNECT 127.0.0.1:$tls_port " \
      "$cluster/n1.access.log" && return 0
    sleep 0.1
  done
  cat "$cluster/n1.access.log"
  return 1
}
check "  n1 counted and logged the tunnel" tunnel_logged
untrusted() {
  ! browse https-untrusted --proxy "127.0.0.1:$(node_port n1)" "$tls_page" &&
    report https-untrusted "'CERT' in r.get('error', '')"
}
check "  without the trusted key the browser refuses the origin's certificate" untrusted

# ---- the status page of every node ----
rows='Array.from(document.querySelectorAll("[data-metric]")).map(
  e => [e.dataset.metric, e.dataset.value, e.dataset.tolerance || null])'
status_page() {
  local n=$1 port
  port=$(node_port "$n")
  browse "status-$n" --wait-for 'document.body.dataset.updates >= 2' \
    --eval "$rows" "http://127.0.0.1:$port/sumcache/status" || return 1
  curl -s "http://127.0.0.1:$port/metrics" >"$dir/metrics-$n.txt"
  python3 tests/browser/agree.py "$dir/status-$n.json" "$dir/metrics-$n.txt"
}
dom() {  # dom NODE JS: the value of JS on NODE's status page, printed
  python3 tests/browser/cdp.py --wait-for 'document.body.dataset.updates >= 1' \
    --eval "$2" "http://127.0.0.1:$(node_port "$1")/sumcache/status" |
    python3 -c 'import json, sys; v = json.load(sys.stdin).get("eval"); print(v); sys.exit(0 if v else 1)'
}
for n in n1 n2 n3; do
  check "status page of $n renders, refreshes, agrees with /metrics" status_page "$n"
  check "  it asked nothing of anyone but $n" report "status-$n" \
    "not r['failed'] and all(x['connected_to'] == '127.0.0.1:$(node_port "$n")' for x in r['responses'])"
done
check "n2's page: two peers up, n1's summary of $parts entries, remote hits" \
  dom n2 'document.querySelectorAll("#peers tbody tr").length === 2 &&
    document.querySelectorAll("#peers .badge.up").length === 2 &&
    document.querySelector("#peers tr[data-peer=n1] td:nth-child(5)").dataset.value === "'$parts'" &&
    document.getElementById("remote-hits").dataset.value === "'$parts'" &&
    document.getElementById("hit-ratio").textContent.trim() === "100.0 %"'
check "n2's charts have points: the split, requests, messages, bytes" \
  dom n2 '["split", "requests", "messages", "bytes"].every(
    c => +document.getElementById("chart-" + c).dataset.points > 0)'
check "n1's page: $parts served to peers, summary traffic by type listed" \
  dom n1 'document.getElementById("peer-hits").dataset.value === "'$parts'" &&
    Array.from(document.querySelectorAll("#traffic td:first-child")).map(
      e => e.textContent).includes("summary_delta")'
check "n1's page shows both tiers: $parts objects in memory and on disk" \
  dom n1 'document.getElementById("cache-objects").dataset.value === "'$parts'" &&
    document.getElementById("disk-objects").dataset.value === "'$parts'"'
stale_banner() {
  local n3pid
  n3pid=$(awk '$1 == "n3" { print $5 }' "$cluster/nodes")
  python3 - "$(node_port n3)" "$n3pid" <<'EOF'
# opens n3's page, stops n3, and waits for the page to say so
import os, signal, sys
sys.path.insert(0, "tests/browser")
import cdp
b = cdp.Browser()
try:
    b.attach()
    b.send("Page.navigate", {"url": "http://127.0.0.1:%s/sumcache/status" % sys.argv[1]})
    b.wait_for("document.body.dataset.updates >= 1")
    os.kill(int(sys.argv[2]), signal.SIGTERM)
    b.wait_for('document.body.classList.contains("stale")', timeout=20)
    print(b.evaluate('document.getElementById("state-text").textContent'))
    print(b.evaluate('document.getElementById("requests").textContent'))
finally:
    b.close()
EOF
}
check "a page whose node stops says so and keeps the last numbers" stale_banner

# ---- HTTPS intercepted: cached, and shared over the peer link ----
ipage=https://localhost:$tls_port/index.html
nss=$(pwd)/$dir/nss-home
mkdir -p "$nss/.pki/nssdb"
certutil -d "sql:$nss/.pki/nssdb" -N --empty-password &&
  certutil -d "sql:$nss/.pki/nssdb" -A -t C,, -n sumcache-test \
    -i "$(pwd)/$dir/ca/ca.crt"
ibrowse() { HOME=$nss browse "$@"; }
origin_before=$(grep -c '"GET /' "$dir/nginx-access.log")
check "intercepted HTTPS page through n1 (our CA in the NSS db): all $parts parts arrive and work" \
  ibrowse ihttps-n1 --proxy "127.0.0.1:$(node_port n1)" --eval "$works" "$ipage"
check "  every part an https:// URL, through n1" report ihttps-n1 \
  "$(whole "$(node_port n1)") and all(x['url'].startswith('https://localhost:') for x in r['responses'])"
logged_https() {  # logged_https NODE WORD: every https part so in NODE's log
  local n
  for _ in $(seq 30); do
    n=$(grep " GET https://localhost:$tls_port/" "$cluster/$1.access.log" |
      grep -c -- "$2")
    [ "$n" -eq "$parts" ] && return 0
    sleep 0.1
  done
  echo "$1 logged $n of $parts https parts as $2"
  cat "$cluster/$1.access.log"
  return 1
}
check "  n1 logged each part as an https:// miss, cached" logged_https n1 " TCP_MISS/200 "
check "n1's summary with the https parts reaches n2" wait_summary $((2 * parts))
links_before=$(metric n1 'sumcache_peer_links_total{result="accepted"}')
check "intercepted HTTPS page through n2 (new profile): all $parts parts arrive and work" \
  ibrowse ihttps-n2 --proxy "127.0.0.1:$(node_port n2)" --eval "$works" "$ipage"
check "  every part through n2" report ihttps-n2 "$(whole "$(node_port n2)")"
check "  n2 logged every part as a remote hit from n1 (CD_SIBLING_HIT/n1)" \
  logged_https n2 " CD_SIBLING_HIT/n1 "
over_link() {
  local now
  now=$(metric n1 'sumcache_peer_links_total{result="accepted"}')
  echo "n1's accepted peer links: $links_before before, $now after"
  [ "$now" -gt "$links_before" ]
}
check "  n2 asked n1 over a peer link" over_link
check "the origin saw each intercepted part once" \
  test "$(grep -c '"GET /' "$dir/nginx-access.log")" -eq $((origin_before + parts))
refused_by_browser() {
  local before now
  before=$(metric n2 'sumcache_tls_handshakes_total{result="rejected"}')
  # HOME without the NSS db: the browser does not trust our CA
  browse ihttps-untrusted --proxy "127.0.0.1:$(node_port n2)" "$ipage" &&
    return 1
  report ihttps-untrusted "'CERT' in r.get('error', '')" || return 1
  now=$(metric n2 'sumcache_tls_handshakes_total{result="rejected"}')
  echo "n2's handshakes refused by clients: $before before, $now after"
  [ "$now" -gt "$before" ]
}
check "  a browser without our CA refuses n2's certificate; n2 counts it" refused_by_browser

check "the cluster stops" ./deploy/cluster.sh down
no_sanitizer_reports() {
  ! grep -l "ERROR: \(Address\|Leak\)Sanitizer\|runtime error:" "$cluster"/n*.log
}
check "no node logged a sanitizer report" no_sanitizer_reports
checks_done browser-check
