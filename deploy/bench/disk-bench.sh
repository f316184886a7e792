#!/usr/bin/env bash
# disk-bench: the disk tier (cache_dir) on this machine.
#   - restart: OBJECTS objects of 4 to 32 KB are fetched through a node with
#     a cache_dir, then the node is stopped (SIGTERM, then SIGKILL) and
#     started again: seconds until it serves, until its index is whole,
#     how many objects it restored, and how many segments it read from
#     their key files; then once more killed with every key file removed,
#     which is the whole scan a node without them would make;
#   - the same objects fetched through Squid 5.7 with a rock cache_dir of
#     the same size and the same cache_mem, and Squid restarted the same
#     two ways;
#   - hits: req/s and p99 of 16 KB and 256 KB hits served from the memory
#     tier, and from the disk tier with a warm page cache (a working set
#     four times cache_mem, so almost every request reads the disk's copy);
#   - hits with a cold page cache (dropped before each run; needs root):
#     the objects at random, sumcache beside Squid's rock;
#   - the index's memory per object on disk.
# wrk runs on CPU 0, sumcache, Squid and the nginx origin on CPU 1. Rounds
# are interleaved; medians are printed.
#
#   OBJECTS=100000 ROUNDS=3 DURATION=5 deploy/bench/disk-bench.sh
#   HITS_ONLY=1   the warm hits only: no restarts, no Squid, no cold runs
#                 (an A/B of the hit path between two builds)
#   WORKERS=N     the node's workers (default 1), all on CPU 1: with
#                 HITS_ONLY, what sharing the disk between workers costs
# The 1 GB object, and cold page caches for it: large-bench.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
. deploy/lib.sh
. deploy/bench/bench-lib.sh
OBJECTS=${OBJECTS:-100000}
ROUNDS=${ROUNDS:-3}
HITS_ONLY=${HITS_ONLY:-0}
WORKERS=${WORKERS:-1}
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
ORIGIN_PORT=${ORIGIN_PORT:-18091}
SC_PORT=${SC_PORT:-23138}
SQUID_PORT=${SQUID_PORT:-23139}

bench_build
bench_workdir sumcache-disk-bench
bench_cleanup_more() { rm -rf "$work/cache" "$work/squid/rock"; }

# ---- origin: nginx, /s/SIZE/ANY is a file of SIZE KB ----
mkdir -p "$work/www"
for s in 4 8 12 16 20 24 28 32 256; do
  head -c $((s * 1024)) /dev/urandom >"$work/www/$s.bin"
done
bench_nginx "$ORIGIN_PORT" '    location ~ ^/s/([0-9]+)/ {
      try_files /$1.bin =404;
      add_header Cache-Control "max-age=86400";
    }'
origin="http://127.0.0.1:$ORIGIN_PORT"

# the records of OBJECTS objects of 18 KB on average, with room, and the
# hit sets below (544 MB)
dir_mb=$((OBJECTS * 18 / 1024 * 3 / 2 + 800))
sc_pid=""
start_node() {
  taskset -c 1 build-bench/sumcache -o http_listen=127.0.0.1:$SC_PORT \
    -o access_log=none -o cache_mem=64MB -o node_name=bench \
    -o workers="$WORKERS" \
    -o "cache_dir=$work/cache ${dir_mb}MB" >>"$work/sumcache.log" 2>&1 &
  sc_pid=$!
  pids+=($sc_pid)
}
metric() {
  curl -s "http://127.0.0.1:$SC_PORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}
now() { date +%s.%N; }

# ---- fill ----
echo "disk-bench: filling $OBJECTS objects of 4 to 32 KB (cache_dir ${dir_mb} MB)" >&2
start_node
wait_port "$SC_PORT"
kill -0 "$sc_pid" 2>/dev/null ||
  { echo "disk-bench: sumcache did not start; see $work/sumcache.log" >&2; exit 1; }
awk -v n="$OBJECTS" -v o="$origin" 'BEGIN {
  for (i = 1; i <= n; i++) printf "url = \"%s/s/%d/%d\"\noutput = \"/dev/null\"\n", o, 4 * (1 + i % 8), i }' \
  >"$work/fill.curl"
t0=$(now)
taskset -c 0 curl -s -Z --parallel-max 16 -x "127.0.0.1:$SC_PORT" -K "$work/fill.curl" 2>/dev/null
until [ "$(metric sumcache_disk_objects)" -ge "$OBJECTS" ] 2>/dev/null; do
  sleep 0.2
  awk -v t0="$t0" -v t="$(now)" 'BEGIN { exit !(t - t0 > 600) }' &&
    { echo "disk-bench: the writes did not finish" >&2; exit 1; }
done
fill_s=$(awk -v t0="$t0" -v t="$(now)" 'BEGIN { printf "%.1f", t - t0 }')
index_b=$(awk -v i="$(metric sumcache_disk_index_bytes)" -v n="$(metric sumcache_disk_objects)" \
  'BEGIN { printf "%.1f", i / n }')
disk_mb=$(awk -v b="$(metric sumcache_disk_bytes)" 'BEGIN { printf "%.0f", b / 1048576 }')

# ---- restarts ----
restart() { # TERM|KILL|SCAN -> "how serve_s whole_s restored keyed/segments"
  local how=$1 sig=$1 t0 ts tw
  [ "$how" = SCAN ] && sig=KILL
  kill "-$sig" "$sc_pid"
  while kill -0 "$sc_pid" 2>/dev/null; do sleep 0.05; done
  [ "$how" = SCAN ] && rm -f "$work"/cache/*.keys
  sync
  t0=$(now)
  start_node
  until curl -s -o /dev/null "http://127.0.0.1:$SC_PORT/metrics"; do sleep 0.01; done
  ts=$(now)
  # every segment found is done (read from its key file, or scanned)
  until [ "$(metric 'sumcache_disk_scan_segments{state="scanned"}')" = \
      "$(metric 'sumcache_disk_scan_segments{state="found"}')" ]; do
    sleep 0.02
  done
  tw=$(now)
  awk -v s="$how" -v t0="$t0" -v ts="$ts" -v tw="$tw" -v n="$(metric sumcache_disk_objects)" \
    -v k="$(metric 'sumcache_disk_scan_segments{state="from_key_file"}')" \
    -v f="$(metric 'sumcache_disk_scan_segments{state="found"}')" \
    'BEGIN { printf "%s %.2f %.2f %d %d/%d\n", s, ts - t0, tw - t0, n, k, f }'
}
# (not in a subshell: start_node keeps the new node's pid)
restarts=""
if [ "$HITS_ONLY" = 0 ]; then
  restart TERM >"$work/restarts.txt"
  restart KILL >>"$work/restarts.txt"
  restart SCAN >>"$work/restarts.txt"
  restarts=$(cat "$work/restarts.txt")
fi

# ---- Squid 5.7 with a rock cache_dir, the same objects ----
# Squid (as user proxy) writes its database and its log in squid/
mkdir -p "$work/squid/rock"
chown -R proxy:proxy "$work/squid" 2>/dev/null || true
cat >"$work/squid.conf" <<EOS
http_port 127.0.0.1:$SQUID_PORT
http_access allow localhost
http_access deny all
cache_mem 64 MB
maximum_object_size_in_memory 64 KB
maximum_object_size 1 MB
cache_dir rock $work/squid/rock $dir_mb
workers 1
pinger_enable off
pid_filename $work/squid.pid
cache_log $work/squid/cache.log
access_log none
coredump_dir $work/squid
shutdown_lifetime 1 seconds
EOS
squid -z -N -f "$work/squid.conf" >/dev/null 2>&1
sq_pid=""
start_squid() {
  rm -f "$work/squid/cache.log"
  taskset -c 1 squid -N -f "$work/squid.conf" >>"$work/squid.out" 2>&1 &
  sq_pid=$!
  pids+=($sq_pid)
}
squid_entries() {
  curl -s "http://127.0.0.1:$SQUID_PORT/squid-internal-mgr/storedir" |
    awk '/Current entries:/ { print $3; exit }'
}
squid_restarts="" squid_stored="" squid_fill_s=""
if [ "$HITS_ONLY" = 0 ]; then
echo "disk-bench: filling Squid's rock store with the same objects" >&2
start_squid
wait_port "$SQUID_PORT"
t0=$(now)
taskset -c 0 curl -s -Z --parallel-max 16 -x "127.0.0.1:$SQUID_PORT" -K "$work/fill.curl" 2>/dev/null
squid_fill_s=$(awk -v t0="$t0" -v t="$(now)" 'BEGIN { printf "%.1f", t - t0 }')
squid_stored=$(squid_entries)
fi
squid_restart() { # TERM|KILL -> "how serve_s whole_s restored"
  local t0 ts tw
  kill "-$1" "$sq_pid"
  while kill -0 "$sq_pid" 2>/dev/null; do sleep 0.05; done
  sync
  t0=$(now)
  start_squid
  until curl -s -o /dev/null "http://127.0.0.1:$SQUID_PORT/squid-internal-mgr/info"; do
    sleep 0.01
    kill -0 "$sq_pid" 2>/dev/null ||
      { echo "disk-bench: Squid did not start; see $work/squid.out" >&2; exit 1; }
  done
  ts=$(now)
  # rock has no index to read: a start scans the whole database
  until grep -qs "Finished rebuilding storage from disk" "$work/squid/cache.log"; do
    sleep 0.02
    awk -v t0="$t0" -v t="$(now)" 'BEGIN { exit !(t - t0 > 900) }' &&
      { echo "disk-bench: Squid did not finish its rebuild" >&2; exit 1; }
  done
  tw=$(now)
  awk -v s="$1" -v t0="$t0" -v ts="$ts" -v tw="$tw" \
    -v n="$(awk '/Objects loaded/ { print $(NF - 2); exit }' "$work/squid/cache.log")" \
    'BEGIN { printf "%s %.2f %.2f %d\n", s, ts - t0, tw - t0, n }'
}
if [ "$HITS_ONLY" = 0 ]; then
  squid_restart TERM >"$work/squid-restarts.txt"
  squid_restart KILL >>"$work/squid-restarts.txt"
  squid_restarts=$(cat "$work/squid-restarts.txt")
fi

# ---- hits: memory tier against disk tier ----
lua() { # $1 = size KB, $2 = how many distinct objects (named m0.. for
         # memory's set, d0.. for the disk's)
  cat >"$work/req.lua" <<EOL
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", "$origin/s/$1/$3" .. (n % $2))
end
EOL
  echo "$work/req.lua"
}
# run NAME SIZE_KB OBJECTS PREFIX -> "name rps p99ms reads": reads is the
# share of requests that read a record from the disk (0 for memory's sets
# and, once their heads are in memory, for the disk's: their bodies are
# then sent from the segment files' pages)
run() {
  local out r0 r1
  r0=$(metric 'sumcache_disk_operations_total{op="read"}')
  out=$(taskset -c 0 wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency \
    -s "$(lua "$2" "$3" "$4")" "http://127.0.0.1:$SC_PORT" 2>&1)
  r1=$(metric 'sumcache_disk_operations_total{op="read"}')
  wrk_line "$1" <<<"$out" | awk -v r=$((r1 - r0)) '{ printf "%s %s %s %.4f\n", $1, $2, $4, r / $5 }'
}
# sets: memory's are 40 MB, the disk's 256 MB (4 x cache_mem). Both are
# larger than this machine's L3 cache (32 MB), so both tiers copy from
# DRAM: a 16 MB memory set, inside the L3, measured memory's hits 5 to
# 10 % faster and the ratio that much lower (MEM16=1000 MEM256=64).
mem16=${MEM16:-2560} disk16=16384 mem256=${MEM256:-160} disk256=1024
# the disk's sets first: memory's, fetched last, are then the ones memory
# holds (fetched first, they were pushed out by the disk's, and their
# runs measured reads back from the disk)
for set in "16 $disk16 d" "256 $disk256 d" "16 $mem16 m" "256 $mem256 m"; do
  set -- $set
  awk -v n="$2" -v o="$origin" -v s="$1" -v p="$3" 'BEGIN {
    for (i = 0; i < n; i++) printf "url = \"%s/s/%d/%s%d\"\noutput = \"/dev/null\"\n", o, s, p, i }' \
    >"$work/warm.curl"
  taskset -c 0 curl -s -Z --parallel-max 16 -x "127.0.0.1:$SC_PORT" -K "$work/warm.curl" 2>/dev/null
done
want=$((OBJECTS + mem16 + disk16 + mem256 + disk256))
for i in $(seq 300); do
  [ "$(metric sumcache_disk_objects)" -ge "$want" ] && break
  sleep 0.2
done
[ "$(metric sumcache_disk_objects)" -ge "$want" ] ||
  { echo "disk-bench: the hit sets did not all reach the disk" >&2; exit 1; }
results="$work/results.txt"
: >"$results"
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  run hit16k_memory 16 $mem16 m >>"$results"
  run hit16k_disk 16 $disk16 d >>"$results"
  run hit256k_memory 256 $mem256 m >>"$results"
  run hit256k_disk 256 $disk256 d >>"$results"
done
disk_hits=$(metric 'sumcache_hits_total{tier="disk"}')
mem_hits=$(metric 'sumcache_hits_total{tier="memory"}')

# ---- cold page cache: sumcache beside Squid's rock, the same objects ----
# Objects of the fill at random: the memory tiers (64 MB each) hold a few
# percent of them, so nearly every hit reads the device.
cat >"$work/cold.lua" <<EOL
math.randomseed(7)
request = function()
  local i = math.random(1, $OBJECTS)
  return wrk.format("GET", "$origin/s/" .. (4 * (1 + i % 8)) .. "/" .. i)
end
EOL
cold_run() { # NAME PORT -> "name rps p99ms"
  local out
  bench_drop
  out=$(taskset -c 0 wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency \
    -s "$work/cold.lua" "http://127.0.0.1:$2" 2>&1)
  wrk_line "$1" <<<"$out" | awk '{ print $1, $2, $4 }'
}
squid_counter() {
  curl -s "http://127.0.0.1:$SQUID_PORT/squid-internal-mgr/counters" |
    awk -v k="$1" '$1 == k { print $3; exit }'
}
cold="$work/cold.txt"
: >"$cold"
cold_hits=""
if [ "$HITS_ONLY" = 0 ] && bench_can_drop; then
  sc_h0=$(metric 'sumcache_hits_total{tier="disk"}')
  sc_r0=$(metric 'sumcache_requests_total{result="local_hit"}')
  sc_m0=$(metric 'sumcache_requests_total{result="miss"}')
  sq_h0=$(squid_counter client_http.hits)
  sq_r0=$(squid_counter client_http.requests)
  for r in $(seq "$ROUNDS"); do
    echo "cold round $r/$ROUNDS" >&2
    cold_run cold_sumcache "$SC_PORT" >>"$cold"
    cold_run cold_squid "$SQUID_PORT" >>"$cold"
  done
  cold_hits=$(awk -v h="$(metric 'sumcache_requests_total{result="local_hit"}')" \
    -v h0="$sc_r0" -v m="$(metric 'sumcache_requests_total{result="miss"}')" -v m0="$sc_m0" \
    -v d="$(metric 'sumcache_hits_total{tier="disk"}')" -v d0="$sc_h0" \
    -v qh="$(squid_counter client_http.hits)" -v qh0="$sq_h0" \
    -v qr="$(squid_counter client_http.requests)" -v qr0="$sq_r0" 'BEGIN {
    printf "hits in the cold runs: sumcache %.1f %% (%.1f %% of them from disk), Squid %.1f %%\n",
      100 * (h - h0) / (h - h0 + m - m0), 100 * (d - d0) / (h - h0),
      100 * (qh - qh0) / (qr - qr0) }')
fi

# ---- report ----
echo
echo "disk-bench: $OBJECTS objects ($disk_mb MB of records) written in $fill_s s;"
echo "  index $index_b bytes an object on disk; the node at workers $WORKERS"
echo
if [ "$HITS_ONLY" = 0 ]; then
  printf "%-22s %10s %14s %10s %18s\n" restart "serving s" "index whole s" restored \
    "key files/segments"
  echo "$restarts" | awk '{ how = $1 == "SCAN" ? "SIGKILL, no key files" : "SIG" $1
    printf "%-22s %10s %14s %10s %18s\n", how, $2, $3, $4, $5 }'
  echo "$squid_restarts" | awk '{ printf "%-22s %10s %14s %10s %18s\n", "Squid rock, SIG" $1, $2, $3, $4, "(scans its db)" }'
  echo "  Squid: $squid_stored of $OBJECTS objects stored in $squid_fill_s s (sumcache: $fill_s s)"
fi
echo
awk -v rounds="$ROUNDS" -v dur="$DURATION" -v conns="$CONNS" "$BENCH_MEDIAN_AWK"'
  { rps[$1] = rps[$1] " " $2; p99[$1] = p99[$1] " " $3; reads[$1] = reads[$1] " " $4 }
  END {
    printf "hits: %d interleaved rounds, wrk -t1 -c%d -d%ds, medians (warm page cache)\n", rounds, conns, dur
    printf "%-16s %10s %9s %20s\n", "run", "req/s", "p99 ms", "read from disk"
    n = split("hit16k_memory hit16k_disk hit256k_memory hit256k_disk", w, " ")
    for (i = 1; i <= n; i++) printf "%-16s %10.0f %9.3f %19.2f%%\n", w[i], median(rps[w[i]]), median(p99[w[i]]), 100 * median(reads[w[i]])
    printf "\ndisk/memory req/s: 16 KB %.2f, 256 KB %.2f\n",
      median(rps["hit16k_disk"]) / median(rps["hit16k_memory"]),
      median(rps["hit256k_disk"]) / median(rps["hit256k_memory"])
  }' "$results"
echo "hits by tier over the run: memory $mem_hits, disk $disk_hits"
if [ -s "$cold" ]; then
  echo
  awk -v rounds="$ROUNDS" -v dur="$DURATION" -v conns="$CONNS" -v n="$OBJECTS" "$BENCH_MEDIAN_AWK"'
    { rps[$1] = rps[$1] " " $2; p99[$1] = p99[$1] " " $3 }
    END {
      printf "cold page cache (dropped before each run): the %d objects at random,\n", n
      printf "  %d interleaved rounds, wrk -t1 -c%d -d%ds, medians\n", rounds, conns, dur
      printf "%-16s %10s %9s\n", "run", "req/s", "p99 ms"
      printf "%-16s %10.0f %9.3f\n", "sumcache", median(rps["cold_sumcache"]), median(p99["cold_sumcache"])
      printf "%-16s %10.0f %9.3f\n", "Squid rock", median(rps["cold_squid"]), median(p99["cold_squid"])
      printf "sumcache/Squid req/s: %.2f\n", median(rps["cold_sumcache"]) / median(rps["cold_squid"])
    }' "$cold"
  echo "$cold_hits"
else
  echo "(cold runs skipped: cannot drop the page cache)"
fi
echo "raw rounds: $results"
