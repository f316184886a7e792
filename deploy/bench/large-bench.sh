#!/usr/bin/env bash
# large-bench: one large object (1 GiB by default) through a node with a
# cache_dir, against reading its bytes off the disk directly.
#   - fetched through: the first request, from an nginx origin, while the
#     node writes the body to its cache_dir as it arrives (MB/s);
#   - served again: the next requests, from the disk tier, sent with
#     sendfile (MB/s), interleaved in each round with dd reading the
#     segment file that holds the record, the disk's own read speed;
#     once with a warm page cache, once with the page cache dropped
#     before each run (cold: the bytes come off the device). With a warm
#     page cache dd measures memory, not the disk, so nginx sending the
#     origin's copy of the file to the same client is the bound there;
#   - served after a restart: the first read checks the body's checksum
#     before the first byte goes out, so the time to the first byte is
#     reported too.
# curl runs on CPU 0, sumcache and nginx on CPU 1. Needs root for the
# cold runs (/proc/sys/vm/drop_caches); without it they are skipped.
#
#   SIZE_MB=1024 ROUNDS=3 deploy/bench/large-bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
. deploy/lib.sh
. deploy/bench/bench-lib.sh
SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-3}
ORIGIN_PORT=${ORIGIN_PORT:-18092}
SC_PORT=${SC_PORT:-23139}

bench_build
bench_workdir sumcache-large-bench
bench_cleanup_more() { rm -rf "$work/cache" "$work/www"; }

mkdir -p "$work/www"
echo "large-bench: writing a ${SIZE_MB} MB file for the origin" >&2
head -c $((SIZE_MB * 1048576)) /dev/urandom >"$work/www/large.bin"
bench_nginx "$ORIGIN_PORT" '    location / { add_header Cache-Control "max-age=86400"; }'
url="http://127.0.0.1:$ORIGIN_PORT/large.bin"

# room for the object four times over; max_object_size follows it
dir_mb=$((SIZE_MB * 4 + 256))
sc_pid=""
start_node() {
  taskset -c 1 build-bench/sumcache -o http_listen=127.0.0.1:$SC_PORT \
    -o access_log=none -o node_name=bench -o "max_object_size=$((SIZE_MB + 1))MB" \
    -o "cache_dir=$work/cache ${dir_mb}MB" >>"$work/sumcache.log" 2>&1 &
  sc_pid=$!
  pids+=($sc_pid)
  wait_port "$SC_PORT"
}
metric() {
  curl -s "http://127.0.0.1:$SC_PORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}
# through the node: "MB/s seconds-to-first-byte"
get() {
  taskset -c 0 curl -s -o /dev/null -x "127.0.0.1:$SC_PORT" \
    -w '%{speed_download} %{time_starttransfer} %{size_download}\n' "$url" |
    awk -v want=$((SIZE_MB * 1048576)) '$3 != want { print "large-bench: short body" > "/dev/stderr"; exit 1 }
      { printf "%.0f %.3f\n", $1 / 1048576, $2 }'
}
# the segment file holding the record: the largest one
segment() { ls -S "$work"/cache/seg-* | grep -v '\.keys$' | head -1; }
dd_read() { # MB/s of reading the segment file
  local seg t0 t1
  seg=$(segment)
  t0=$(date +%s.%N)
  taskset -c 0 dd if="$seg" of=/dev/null bs=1M status=none
  t1=$(date +%s.%N)
  awk -v b="$(stat -c %s "$seg")" -v t0="$t0" -v t1="$t1" \
    'BEGIN { printf "%.0f\n", b / 1048576 / (t1 - t0) }'
}
can_drop=0
if bench_can_drop; then can_drop=1; fi

start_node
echo "large-bench: fetching through" >&2
read -r fetch_mbps _ < <(get)
for i in $(seq 600); do
  [ "$(metric sumcache_disk_streamed_total)" = 1 ] && break
  sleep 0.1
done
[ "$(metric sumcache_disk_streamed_total)" = 1 ] ||
  { echo "large-bench: the object was not stored" >&2; exit 1; }
origin_before=$(metric sumcache_origin_requests_total)

results="$work/results.txt"
: >"$results"
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  echo "dd_warm $(dd_read)" >>"$results"
  echo "sumcache_warm $(get | cut -d' ' -f1)" >>"$results"
  cat "$work/www/large.bin" >/dev/null # nginx too, from a warm page cache
  echo "nginx_warm $(taskset -c 0 curl -s -o /dev/null -w '%{speed_download}' "$url" |
    awk '{ printf "%.0f", $1 / 1048576 }')" >>"$results"
  if [ $can_drop = 1 ]; then
    bench_drop
    echo "dd_cold $(dd_read)" >>"$results"
    bench_drop
    echo "sumcache_cold $(get | cut -d' ' -f1)" >>"$results"
  fi
done
[ "$(metric sumcache_origin_requests_total)" = "$origin_before" ] ||
  { echo "large-bench: a served-again request went to the origin" >&2; exit 1; }

# after a restart: the first read checks the checksum first
kill -TERM "$sc_pid"
while kill -0 "$sc_pid" 2>/dev/null; do sleep 0.05; done
start_node
until [ "$(metric 'sumcache_disk_scan_segments{state="scanned"}')" = \
    "$(metric 'sumcache_disk_scan_segments{state="found"}')" ]; do sleep 0.05; done
read -r restart_mbps restart_ttfb < <(get)

echo
echo "large-bench: one object of $SIZE_MB MB, $ROUNDS interleaved rounds, medians"
echo "  fetched through from nginx, stored while sent: $fetch_mbps MB/s"
awk "$BENCH_MEDIAN_AWK"'
  { v[$1] = v[$1] " " $2 }
  END {
    printf "%-20s %10s %14s %16s\n", "served again", "sumcache", "dd (disk)",
      "nginx (same file)"
    split("warm cold", k, " ")
    for (i = 1; i <= 2; i++) {
      if (v["dd_" k[i]] == "") continue
      s = median(v["sumcache_" k[i]]); d = median(v["dd_" k[i]])
      n = v["nginx_" k[i]] == "" ? "" : sprintf("%5.0f MB/s %5.2fx", median(v["nginx_" k[i]]),
        s / median(v["nginx_" k[i]]))
      printf "%-20s %5.0f MB/s %5.0f MB/s %5.2fx %s\n", k[i] " page cache", s, d, s / d, n
    }
  }' "$results"
[ $can_drop = 1 ] || echo "  (cold runs skipped: cannot drop the page cache)"
echo "  first request after a restart: $restart_mbps MB/s, first byte after $restart_ttfb s (its checksum checked first)"
echo "raw rounds: $results"
