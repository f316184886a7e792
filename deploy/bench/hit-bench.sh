#!/usr/bin/env bash
# hit-bench: sumcache against Squid 5.7, Traffic Server 9.2, Varnish 7.1
# and nginx direct on this machine, interleaved round by round
# (../shared/BENCHMARKS.md):
#   - 1 KB / 16 KB / 256 KB cache hits through sumcache, Squid, Traffic
#     Server and Varnish, and the same files from nginx directly (the
#     ceiling). Traffic Server is a forward proxy with one event thread
#     and its RAM cache; Varnish has no forward-proxy mode and is measured
#     as a reverse cache of the same origin (requests name the path, not
#     the URL), one thread pool, memory storage;
#   - 1 KB / 16 KB misses (no-store) through the four caches;
#   - resident memory per cached 1 KB object (100k objects).
# wrk runs on CPU 0; the server under test and the origin nginx on CPU 1.
# Prints absolute medians (req/s, p50, p99, CPU seconds per 10,000
# requests), sumcache's ratios against each, and whether the origin
# answered any request during the runs of hits (nginx's stub_status).
#
# WORKERS sets sumcache's workers (default 1: one core for each server);
# deploy/bench/workers-bench.sh sets 1, 2 and 4 side by side.
#
#   ROUNDS=5 DURATION=10 CONNS=50 MEM_OBJECTS=100000 WORKERS=1 deploy/bench/hit-bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
. deploy/lib.sh
. deploy/bench/bench-lib.sh
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10}
CONNS=${CONNS:-50}
WORKERS=${WORKERS:-1}
MEM_OBJECTS=${MEM_OBJECTS:-100000}
ORIGIN_PORT=${ORIGIN_PORT:-18081}
SQUID_PORT=${SQUID_PORT:-13128}
SC_PORT=${SC_PORT:-23128}
VARNISH_PORT=${VARNISH_PORT:-14128}
ATS_PORT=${ATS_PORT:-15128}

bench_build
bench_workdir sumcache-bench


# ---- origin: nginx serving random-byte files ----
mkdir -p "$work/www"
for s in 1 16 256; do head -c $((s * 1024)) /dev/urandom >"$work/www/${s}k.bin"; done
bench_nginx "$ORIGIN_PORT" "    location / { add_header Cache-Control \"max-age=3600\"; }
    location /nostore/ { alias $work/www/; add_header Cache-Control \"no-store\"; }
    location /m/ { try_files /1k.bin =404; add_header Cache-Control \"max-age=3600\"; }
    location = /origin-status { stub_status; }"

# ---- Squid 5.7, memory cache only, one process ----
mkdir -p "$work/squid"
chown proxy:proxy "$work/squid" 2>/dev/null || true
cat >"$work/squid.conf" <<EOS
http_port 127.0.0.1:$SQUID_PORT
http_access allow localhost
http_access deny all
cache_mem 512 MB
maximum_object_size_in_memory 1 MB
memory_replacement_policy lru
workers 1
pid_filename $work/squid/squid.pid
cache_log $work/squid/cache.log
access_log none
coredump_dir $work/squid
shutdown_lifetime 1 seconds
via on
EOS
taskset -c 1 squid -N -f "$work/squid.conf" &
pids+=($!)
squid_pid=$!

# ---- Varnish 7.1 (Debian's), a reverse cache of the origin, run as root
# (-j none) from the bench's directory; X-Cache says HIT as the others ----
command -v varnishd >/dev/null || {
  echo "hit-bench: installing varnish" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends varnish >/dev/null
}
cat >"$work/varnish.vcl" <<EOV
vcl 4.1;
backend origin { .host = "127.0.0.1"; .port = "$ORIGIN_PORT"; }
sub vcl_deliver {
  if (obj.hits > 0) { set resp.http.X-Cache = "HIT"; }
  else { set resp.http.X-Cache = "MISS"; }
}
EOV
taskset -c 1 varnishd -F -j none -n "$work/varnish" -a "127.0.0.1:$VARNISH_PORT" \
  -f "$work/varnish.vcl" -s malloc,512m -p thread_pools=1 \
  >"$work/varnish.log" 2>&1 &
pids+=($!)
varnish_mgr=$!

# ---- Traffic Server 9.2 (Debian's): a forward proxy, its RAM cache in
# front of a 512 MB cache file, one event thread. It will not serve as
# root, so it runs as Debian's trafficserver user on a copy of the
# package's configuration under the bench's directory (a runroot) ----
command -v traffic_server >/dev/null || {
  echo "hit-bench: installing trafficserver" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends trafficserver >/dev/null
}
ats=$work/ats
mkdir -p "$ats"/{etc,data,var,run,log,cache}
cp -r /etc/trafficserver/. "$ats/etc/"
cat >"$ats/runroot.yaml" <<EOY
prefix: $ats
exec_prefix: /usr
bindir: /usr/bin
sbindir: /usr/sbin
sysconfdir: $ats/etc
datadir: $ats/data
includedir: /usr/include
libdir: /usr/lib/trafficserver
libexecdir: /usr/lib/trafficserver/modules
localstatedir: $ats/var
runtimedir: $ats/run
logdir: $ats/log
cachedir: $ats/cache
EOY
cat >>"$ats/etc/records.config" <<EOR
CONFIG proxy.config.http.server_ports STRING $ATS_PORT:ipv4
CONFIG proxy.config.url_remap.remap_required INT 0
CONFIG proxy.config.http.cache.required_headers INT 0
CONFIG proxy.config.exec_thread.autoconfig INT 0
CONFIG proxy.config.exec_thread.limit INT 1
CONFIG proxy.config.cache.ram_cache.size INT 536870912
CONFIG proxy.config.admin.user_id STRING trafficserver
EOR
echo "$ats/cache 512M" >"$ats/etc/storage.config"
# X-Cache on request (X-Debug: X-Cache), for the check that a run hits
echo "xdebug.so" >>"$ats/etc/plugin.config"
chown -R trafficserver:trafficserver "$ats"
(cd "$ats" && exec taskset -c 1 traffic_server --run-root="$ats/runroot.yaml" \
  >"$ats/out.log" 2>&1) &
pids+=($!)
ats_pid=$!

# ---- sumcache ----
taskset -c 1 build-bench/sumcache -o http_listen=127.0.0.1:$SC_PORT \
  -o access_log=none -o cache_mem=512MB -o workers="$WORKERS" \
  >"$work/sumcache.log" 2>&1 &
pids+=($!)
sc_pid=$!

wait_port "$ORIGIN_PORT"; wait_port "$SQUID_PORT"; wait_port "$SC_PORT"
wait_port "$VARNISH_PORT"; wait_port "$ATS_PORT"
# a port answered by something else (a stale server) would measure that
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null || { echo "hit-bench: a server died at start; see $work" >&2; exit 1; }
done
nginx_pid=$(cat "$work/nginx.pid")
# Varnish's work is its child's (the manager only watches it)
varnish_pid=$(pgrep -P "$varnish_mgr" | head -n 1 || true)
[ -n "$varnish_pid" ] || { echo "hit-bench: no Varnish child; see $work" >&2; exit 1; }

origin="http://127.0.0.1:$ORIGIN_PORT"
# Warm both caches and prove that the second fetch is a hit.
for s in 1 16 256; do
  for port in $SC_PORT $SQUID_PORT; do
    bench_warm hit-bench "$port" "$origin/${s}k.bin"
  done
  # Traffic Server says what it did when asked (its xdebug plugin)
  for i in 1 2 3; do
    hit=$(curl -s -o /dev/null -D - --proxy "127.0.0.1:$ATS_PORT" \
      -H "X-Debug: X-Cache" "$origin/${s}k.bin" | tr -d '\r' |
      grep -i '^X-Cache:' || true)
    case "$hit" in *hit-fresh*) break ;; esac
    sleep 1   # its cache may still be opening its file
  done
  case "$hit" in
    *hit-fresh*) ;;
    *) echo "hit-bench: ${s}k.bin is not a Traffic Server hit ($hit)" >&2; exit 1 ;;
  esac
  # Varnish by path, with the Host the runs send
  for i in 1 2; do
    hit=$(curl -s -o /dev/null -D - -H "Host: 127.0.0.1:$ORIGIN_PORT" \
      "http://127.0.0.1:$VARNISH_PORT/${s}k.bin" | tr -d '\r' |
      grep -i '^X-Cache:' || true)
  done
  case "$hit" in
    *HIT*) ;;
    *) echo "hit-bench: /${s}k.bin is not a Varnish hit ($hit)" >&2; exit 1 ;;
  esac
done

lua() { # $1 = absolute URL or path
  cat >"$work/req.lua" <<EOL
init = function(args)
  wrk.path = "$1"
  wrk.headers["Host"] = "127.0.0.1:$ORIGIN_PORT"
end
EOL
  echo "$work/req.lua"
}


# Requests the origin has answered so far, this one included (nginx's
# stub_status: its third line is "accepts handled requests").
origin_requests() {
  curl -s "http://127.0.0.1:$ORIGIN_PORT/origin-status" | awk 'NR == 3 { print $3 }'
}

# run NAME PORT TARGET PID -> appends "name rps p50ms p99ms cpu_s_per_10k
# origin_requests": the last is what reached the origin during the run
# (0 for a run of hits; a run of nginx itself counts its own)
run() {
  local name=$1 port=$2 target=$3 pid=$4 out t0 t1 o0 o1
  o0=$(origin_requests)
  t0=$(bench_ticks "$pid")
  out=$(taskset -c 0 wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency \
    -s "$(lua "$target")" "http://127.0.0.1:$port" 2>&1)
  t1=$(bench_ticks "$pid")
  o1=$(origin_requests)
  wrk_line "$name" <<<"$out" | awk -v dt=$((t1 - t0)) -v hz="$BENCH_HZ" \
    -v o=$((o1 - o0 - 1)) '
    { printf "%s %s %s %s %.3f %d\n", $1, $2, $3, $4, (dt / hz) / ($5 / 10000), o }'
}

results="$work/results.txt"
: >"$results"
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  for s in 1 16 256; do
    run "hit${s}k_sumcache" $SC_PORT "$origin/${s}k.bin" $sc_pid >>"$results"
    run "hit${s}k_squid" $SQUID_PORT "$origin/${s}k.bin" $squid_pid >>"$results"
    run "hit${s}k_ats" $ATS_PORT "$origin/${s}k.bin" $ats_pid >>"$results"
    run "hit${s}k_varnish" $VARNISH_PORT "/${s}k.bin" $varnish_pid >>"$results"
    run "hit${s}k_nginx" $ORIGIN_PORT "/${s}k.bin" $nginx_pid >>"$results"
  done
  for s in 1 16; do
    run "miss${s}k_sumcache" $SC_PORT "$origin/nostore/${s}k.bin" $sc_pid >>"$results"
    run "miss${s}k_squid" $SQUID_PORT "$origin/nostore/${s}k.bin" $squid_pid >>"$results"
    run "miss${s}k_ats" $ATS_PORT "$origin/nostore/${s}k.bin" $ats_pid >>"$results"
    run "miss${s}k_varnish" $VARNISH_PORT "/nostore/${s}k.bin" $varnish_pid >>"$results"
  done
done

# ---- memory per cached object ----
fill() { # port pid -> RSS growth in KiB per object
  local port=$1 pid=$2 before after
  # one curl process, a keep-alive connection per parallel slot
  awk -v n="$MEM_OBJECTS" -v o="$ORIGIN_PORT" 'BEGIN {
    for (i = 1; i <= n; i++) printf "url = \"http://127.0.0.1:%d/m/%d\"\noutput = \"/dev/null\"\n", o, i }' \
    >"$work/fill.curl"
  before=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  taskset -c 0 curl -s -Z --parallel-max 8 -x "127.0.0.1:$port" -K "$work/fill.curl" 2>/dev/null
  after=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  awk -v a="$after" -v b="$before" -v n="$MEM_OBJECTS" 'BEGIN { printf "%.2f", (a - b) / n }'
}
echo "memory: filling $MEM_OBJECTS objects of 1 KB" >&2
mem_sc=$(fill $SC_PORT $sc_pid)
mem_squid=$(fill $SQUID_PORT $squid_pid)
objects=$(curl -s "http://127.0.0.1:$SC_PORT/metrics" | awk '/^sumcache_cache_objects / {print $2}')

# ---- report ----
awk -v rounds="$ROUNDS" -v dur="$DURATION" -v conns="$CONNS" "$BENCH_MEDIAN_AWK"'
  { rps[$1] = rps[$1] " " $2; p50[$1] = p50[$1] " " $3; p99[$1] = p99[$1] " " $4; cpu[$1] = cpu[$1] " " $5
    if ($1 ~ /^hit/ && $1 !~ /_nginx$/) { hitruns++; if ($6 != 0) { fetched += $6; unverified = unverified " " $1 } } }
  END {
    printf "hit-bench: %d interleaved rounds, wrk -t1 -c%d -d%ds, medians\n\n", rounds, conns, dur
    printf "%-18s %10s %9s %9s %12s\n", "run", "req/s", "p50 ms", "p99 ms", "CPU s/10k"
    n = split("hit1k hit16k hit256k miss1k miss16k", w, " ")
    for (i = 1; i <= n; i++) for (k = 1; k <= 5; k++) {
      split("sumcache squid ats varnish nginx", who, " "); key = w[i] "_" who[k]
      if (!(key in rps)) continue
      printf "%-18s %10.0f %9.3f %9.3f %12.3f\n", key, median(rps[key]), median(p50[key]), median(p99[key]), median(cpu[key])
    }
    printf "\n%-10s %8s %8s %8s %8s %14s %14s\n", "sumcache/", "Squid", "ATS", "Varnish", "nginx", "CPU/req vs ATS", "vs Varnish"
    for (i = 1; i <= n; i++) {
      s = median(rps[w[i] "_sumcache"]); c = median(cpu[w[i] "_sumcache"])
      ng = (w[i] "_nginx" in rps) ? sprintf("%8.2f", s / median(rps[w[i] "_nginx"])) : sprintf("%8s", "-")
      printf "%-10s %8.2f %8.2f %8.2f %s %14.2f %14.2f\n", w[i], s / median(rps[w[i] "_squid"]), s / median(rps[w[i] "_ats"]), s / median(rps[w[i] "_varnish"]), ng, c / median(cpu[w[i] "_ats"]), c / median(cpu[w[i] "_varnish"])
    }
    if (fetched == 0)
      printf "\nevery hit verified: the origin answered no request during the %d runs of hits\n", hitruns
    else
      printf "\nNOT ALL HITS: the origin answered %d requests during runs of hits:%s\n", fetched, unverified
  }' "$results"
printf '\nresident memory per cached 1 KB object (%s objects; sumcache holds %s):\n' "$MEM_OBJECTS" "$objects"
printf '  sumcache %s KiB   Squid %s KiB\n' "$mem_sc" "$mem_squid"
echo
echo "raw rounds: $results"
