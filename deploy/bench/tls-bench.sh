#!/usr/bin/env bash
# tls-bench: intercepted HTTPS hits through sumcache against Squid 5.7 with
# ssl-bump, interleaved round by round (../shared/BENCHMARKS.md):
#   - 1 KB hits on keep-alive intercepted connections (CONNECT, TLS to the
#     proxy's leaf, then GET after GET), and sumcache's plain-http 1 KB hits
#     measured by the same client;
#   - new connections per second, one request each (CONNECT and a full
#     handshake every time; the leaf is cached);
#   - minting a leaf and holding one (build-bench/leaf-bench).
# The client is build-bench/tls-load (wrk cannot CONNECT) on CPU 0; each
# proxy and the origin nginx on CPU 1. The "client" column is how busy
# tls-load kept its core: near 100 % the rate is the client's limit, not
# the proxy's, which is why the new connections are also compared by the
# proxies' CPU per connection (a handshake costs the client more than
# the server: it verifies a chain and a signature, the server signs). Squid is Debian's squid-openssl 5.7
# (the squid package cannot bump), unpacked under build-bench/ rather than
# installed: it conflicts with the squid package the tests use.
#
# WORKERS sets sumcache's workers (default 1), all on CPU 1: the CPU per
# new connection at 1 and 2 is the price of sharing the leaf cache.
#
#   ROUNDS=5 DURATION=10 CONNS=50 WORKERS=1 deploy/bench/tls-bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
. deploy/lib.sh
. deploy/bench/bench-lib.sh
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10}
CONNS=${CONNS:-50}
ORIGIN_PORT=${ORIGIN_PORT:-18091}
TLS_PORT=${TLS_PORT:-18443}
SQUID_PORT=${SQUID_PORT:-13138}
SC_PORT=${SC_PORT:-23138}

bench_build
bench_workdir sumcache-tls-bench
root=$(pwd)

# ---- Squid with OpenSSL, unpacked once ----
sq=$root/build-bench/squid-openssl
if [ ! -x "$sq/usr/sbin/squid" ]; then
  mkdir -p "$sq.pkg"
  (cd "$sq.pkg" && apt-get download -q squid-openssl >/dev/null)
  dpkg-deb -x "$sq.pkg"/squid-openssl_*.deb "$sq"
fi

# ---- a CA for the origin, and one for both proxies' leaves ----
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -days 2 -subj "/CN=bench origin CA" -keyout "$work/origin-ca.key" \
  -out "$work/origin-ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj /CN=localhost -keyout "$work/origin.key" -out "$work/origin.csr" \
  2>/dev/null
openssl x509 -req -in "$work/origin.csr" -CA "$work/origin-ca.crt" \
  -CAkey "$work/origin-ca.key" -CAcreateserial -days 2 \
  -extfile <(echo "subjectAltName=DNS:localhost") -out "$work/origin.crt" \
  2>/dev/null
build-bench/sumcache --make-ca "$work/ca" >/dev/null

# ---- origin: nginx, the same 1 KB file over http and https ----
# (bench_nginx's LOCATIONS go inside its one server block: these close
# it and open the TLS server, which its own closing brace ends)
mkdir -p "$work/www"
head -c 1024 /dev/urandom >"$work/www/1k.bin"
bench_nginx "$ORIGIN_PORT" "    location / { add_header Cache-Control \"max-age=3600\"; }
  }
  server {
    listen 127.0.0.1:$TLS_PORT ssl;
    listen [::1]:$TLS_PORT ssl;
    ssl_certificate $work/origin.crt;
    ssl_certificate_key $work/origin.key;
    root $work/www;
    location / { add_header Cache-Control \"max-age=3600\"; }"
wait_port "$TLS_PORT"

# ---- Squid 5.7, ssl-bump of every CONNECT, memory cache only ----
mkdir -p "$work/squid"
"$sq/usr/lib/squid/security_file_certgen" -c -s "$work/squid/ssldb" -M 4MB \
  >/dev/null
chown -R proxy:proxy "$work/squid" 2>/dev/null || true
cat >"$work/squid.conf" <<EOS
http_port 127.0.0.1:$SQUID_PORT ssl-bump generate-host-certificates=on dynamic_cert_mem_cache_size=4MB tls-cert=$work/ca/ca.crt tls-key=$work/ca/ca.key
sslcrtd_program $sq/usr/lib/squid/security_file_certgen -s $work/squid/ssldb -M 4MB
sslcrtd_children 2 startup=1 idle=1
ssl_bump bump all
tls_outgoing_options cafile=$work/origin-ca.crt
acl SSL_ports port $TLS_PORT
acl CONNECT method CONNECT
http_access deny CONNECT !SSL_ports
http_access allow localhost
http_access deny all
cache_mem 512 MB
maximum_object_size_in_memory 1 MB
workers 1
pid_filename $work/squid/squid.pid
cache_log $work/squid/cache.log
access_log none
coredump_dir $work/squid
shutdown_lifetime 1 seconds
EOS
taskset -c 1 "$sq/usr/sbin/squid" -N -f "$work/squid.conf" &
pids+=($!)
squid_pid=$!

# ---- sumcache, intercepting every host ----
taskset -c 1 build-bench/sumcache -o http_listen=127.0.0.1:$SC_PORT \
  -o access_log=none -o cache_mem=512MB -o 'tls_intercept=*' \
  -o "tls_ca_cert=$work/ca/ca.crt" -o "tls_ca_key=$work/ca/ca.key" \
  -o "tls_upstream_ca=$work/origin-ca.crt" -o "connect_ports=$TLS_PORT" \
  -o workers="${WORKERS:-1}" >"$work/sumcache.log" 2>&1 &
pids+=($!)
sc_pid=$!

wait_port "$SQUID_PORT"; wait_port "$SC_PORT"
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null || { echo "tls-bench: a server died at start; see $work" >&2; exit 1; }
done

tls_url="https://localhost:$TLS_PORT/1k.bin"
http_url="http://127.0.0.1:$ORIGIN_PORT/1k.bin"
# Warm both caches and prove that the second fetch is a hit, bumped: the
# client verifies the proxy's leaf against our CA (a tunnel would show
# the origin's certificate, which it does not trust).
for port in $SC_PORT $SQUID_PORT; do
  bench_warm tls-bench "$port" "$tls_url" --cacert "$work/ca/ca.crt"
done
bench_warm tls-bench "$SC_PORT" "$http_url"


# run NAME MODE PORT PID
#   -> "name rps p50ms p99ms cpu_s_per_10k errors client_busy"
run() {
  local name=$1 mode=$2 port=$3 pid=$4 out t0 t1 target=localhost:$TLS_PORT
  [ "$mode" = plain ] && target=127.0.0.1:$ORIGIN_PORT
  t0=$(bench_ticks "$pid")
  out=$(taskset -c 0 build-bench/tls-load "$mode" "$port" "$target" /1k.bin \
    "$work/ca/ca.crt" "$CONNS" "$DURATION")
  t1=$(bench_ticks "$pid")
  awk -v name="$name" -v dt=$((t1 - t0)) -v hz="$BENCH_HZ" '
    { printf "%s %s %s %s %.3f %s %s\n", name, $5, $7, $9, (dt / hz) / ($3 / 10000), $11, $13 }' <<<"$out"
}

results="$work/results.txt"
: >"$results"
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  run hit1k_tls_sumcache tls $SC_PORT $sc_pid >>"$results"
  run hit1k_tls_squid tls $SQUID_PORT $squid_pid >>"$results"
  run hit1k_plain_sumcache plain $SC_PORT $sc_pid >>"$results"
  run newconn_sumcache connect $SC_PORT $sc_pid >>"$results"
  run newconn_squid connect $SQUID_PORT $squid_pid >>"$results"
done

# ---- report ----
awk -v rounds="$ROUNDS" -v dur="$DURATION" -v conns="$CONNS" "$BENCH_MEDIAN_AWK"'
  { rps[$1] = rps[$1] " " $2; p50[$1] = p50[$1] " " $3; p99[$1] = p99[$1] " " $4
    cpu[$1] = cpu[$1] " " $5; err[$1] += $6; busy[$1] = busy[$1] " " $7 }
  END {
    printf "tls-bench: %d interleaved rounds, tls-load with %d connections for %d s, medians\n\n", rounds, conns, dur
    printf "%-22s %10s %9s %9s %12s %7s %8s\n", "run", "req/s", "p50 ms", "p99 ms", "CPU s/10k", "errors", "client"
    n = split("hit1k_tls_sumcache hit1k_tls_squid hit1k_plain_sumcache newconn_sumcache newconn_squid", k, " ")
    for (i = 1; i <= n; i++)
      printf "%-22s %10.0f %9.3f %9.3f %12.3f %7d %7.0f%%\n", k[i], median(rps[k[i]]), median(p50[k[i]]), median(p99[k[i]]), median(cpu[k[i]]), err[k[i]], 100 * median(busy[k[i]])
    printf "\nintercepted 1 KB hits, sumcache/Squid:        %.2f\n", median(rps["hit1k_tls_sumcache"]) / median(rps["hit1k_tls_squid"])
    printf "intercepted / plain-http 1 KB hits, sumcache: %.2f\n", median(rps["hit1k_tls_sumcache"]) / median(rps["hit1k_plain_sumcache"])
    printf "new connections per second, sumcache/Squid:   %.2f\n", median(rps["newconn_sumcache"]) / median(rps["newconn_squid"])
    printf "new connections per CPU second, sumcache/Squid: %.2f\n", median(cpu["newconn_squid"]) / median(cpu["newconn_sumcache"])
  }' "$results"
echo
taskset -c 1 build-bench/leaf-bench
echo
echo "raw rounds: $results"
