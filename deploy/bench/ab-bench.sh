#!/usr/bin/env bash
# ab-bench: this tree's build against an earlier commit's, on the same
# workload, interleaved run by run, so that a change to the hit or miss
# path is measured against what it replaced, not against a figure taken
# on another day:
#   - 1 KB hits and 1 KB misses (no-store) through each build, memory
#     tier only, as hit-bench runs them, and 1 KB hits on a new
#     connection each (wrk's "Connection: close": the accept path);
#   - req/s, p99 and CPU seconds per 10,000 requests of each, medians of
#     ROUNDS rounds, and this tree's over the other's.
# REV is built in build-ab/REV (Release, no tests). wrk runs on CPU 0;
# both nodes and the nginx origin on CPU 1.
#
#   ROUNDS=5 DURATION=5 deploy/bench/ab-bench.sh REV
set -euo pipefail
cd "$(dirname "$0")/../.."
. deploy/lib.sh
. deploy/bench/bench-lib.sh
[ $# = 1 ] || { echo "usage: $0 REV" >&2; exit 2; }
rev=$(git rev-parse --short "$1^{commit}")
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
ORIGIN_PORT=${ORIGIN_PORT:-18085}
NEW_PORT=${NEW_PORT:-23185}
OLD_PORT=${OLD_PORT:-23186}

bench_build
old_src="build-ab/$rev/src"
if [ ! -x "build-ab/$rev/sumcache" ]; then
  echo "ab-bench: building $rev" >&2
  rm -rf "build-ab/$rev"
  mkdir -p "$old_src"
  git archive "$rev" | tar -x -C "$old_src"
  cmake -S "$old_src" -B "build-ab/$rev/build" -DCMAKE_BUILD_TYPE=Release \
    -DSUMCACHE_TESTS=OFF >/dev/null
  cmake --build "build-ab/$rev/build" -j"$(nproc)" --target sumcache >/dev/null
  cp "build-ab/$rev/build/sumcache" "build-ab/$rev/sumcache"
fi
bench_workdir sumcache-ab-bench

mkdir -p "$work/www"
head -c 1024 /dev/urandom >"$work/www/1k.bin"
bench_nginx "$ORIGIN_PORT" "    location / { add_header Cache-Control \"max-age=3600\"; }
    location /nostore/ { alias $work/www/; add_header Cache-Control \"no-store\"; }"

# start BINARY PORT: a node, its pid in $node (not in a subshell, so that
# pids keeps it for the cleanup)
start() {
  taskset -c 1 "$1" -o "http_listen=127.0.0.1:$2" -o access_log=none \
    -o cache_mem=512MB >>"$work/nodes.log" 2>&1 &
  node=$!
  pids+=($node)
  wait_port "$2"
  kill -0 "$node" 2>/dev/null ||
    { echo "ab-bench: $1 did not start; see $work/nodes.log" >&2; exit 1; }
}
start build-bench/sumcache "$NEW_PORT"
new_pid=$node
start "build-ab/$rev/sumcache" "$OLD_PORT"
old_pid=$node
origin="http://127.0.0.1:$ORIGIN_PORT"
for port in $NEW_PORT $OLD_PORT; do
  bench_warm ab-bench "$port" "$origin/1k.bin"
done

# run NAME PORT URL PID [WRK-ARG...] -> "name rps p50ms p99ms cpu_s_per_10k"
run() {
  local t0 t1 out
  cat >"$work/req.lua" <<EOL
init = function(args) wrk.path = "$3" end
EOL
  t0=$(bench_ticks "$4")
  out=$(taskset -c 0 wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency \
    "${@:5}" -s "$work/req.lua" "http://127.0.0.1:$2" 2>&1)
  t1=$(bench_ticks "$4")
  wrk_line "$1" <<<"$out" | awk -v dt=$((t1 - t0)) -v hz="$BENCH_HZ" '
    { printf "%s %s %s %s %.3f\n", $1, $2, $3, $4, (dt / hz) / ($5 / 10000) }'
}
results="$work/results.txt"
: >"$results"
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  # the order alternates, so neither build always runs second
  if [ $((r % 2)) = 1 ]; then order="new old"; else order="old new"; fi
  for w in hit1k close1k miss1k; do
    url="$origin/1k.bin" extra=()
    [ "$w" = miss1k ] && url="$origin/nostore/1k.bin"
    [ "$w" = close1k ] && extra=(-H "Connection: close")
    for who in $order; do
      if [ "$who" = new ]; then
        run "${w}_new" "$NEW_PORT" "$url" "$new_pid" "${extra[@]}"
      else run "${w}_old" "$OLD_PORT" "$url" "$old_pid" "${extra[@]}"; fi \
        >>"$results"
    done
  done
done

awk -v rounds="$ROUNDS" -v dur="$DURATION" -v conns="$CONNS" -v rev="$rev" \
  "$BENCH_MEDIAN_AWK"'
  { rps[$1] = rps[$1] " " $2; p99[$1] = p99[$1] " " $4; cpu[$1] = cpu[$1] " " $5
    each[$1] = each[$1] sprintf(" %.0f", $2) }
  END {
    printf "ab-bench: this tree (new) against %s (old), %d interleaved rounds, wrk -t1 -c%d -d%ds, medians\n\n", rev, rounds, conns, dur
    printf "%-12s %10s %9s %12s   %s\n", "run", "req/s", "p99 ms", "CPU s/10k", "req/s by round"
    split("hit1k_new hit1k_old close1k_new close1k_old miss1k_new miss1k_old", k, " ")
    for (i = 1; i <= 6; i++)
      printf "%-12s %10.0f %9.3f %12.3f  %s\n", k[i], median(rps[k[i]]), median(p99[k[i]]), median(cpu[k[i]]), each[k[i]]
    printf "\n%-8s %12s %16s\n", "new/old", "req/s", "CPU per request"
    split("hit1k close1k miss1k", w, " ")
    for (i = 1; i <= 3; i++)
      printf "%-8s %12.3f %16.3f\n", w[i], median(rps[w[i] "_new"]) / median(rps[w[i] "_old"]), median(cpu[w[i] "_new"]) / median(cpu[w[i] "_old"])
  }' "$results"
echo
echo "raw rounds: $results"
