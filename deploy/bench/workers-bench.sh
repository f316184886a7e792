#!/usr/bin/env bash
# workers-bench: what `workers N` costs and gives, on this machine
# (interleaved rounds, medians; ../shared/BENCHMARKS.md):
#   - the price of sharing: CPU seconds per 10,000 1 KB, 16 KB and 256 KB
#     hits and 1 KB misses at workers 1, 2 and 4, the node on CPU 1 and
#     wrk and the origin on CPU 0, so the CPU per request is the figure
#     (the workers take turns on one core: the locks, atomics and
#     threads, not the scaling). One node runs at a time, started afresh
#     for each run, in an order that rotates by round, so no idle node
#     and no origin shares its core, and the ratios are each round's
#     own, so the machine's drift between rounds cancels;
#   - throughput on both cores, wrk sharing them: workers 1 against
#     workers 2, 1 KB hits;
#   - lock contention: workers 8 on the 2 cores, every client on one hot
#     1 KB URL: the store's lock waits per 10,000 requests and the time
#     waited (sumcache_store_lock_waits_total, _wait_seconds_total).
#
#   ROUNDS=5 DURATION=5 CONNS=50 deploy/bench/workers-bench.sh
#   PER_WORKER=1  each one-core node gets CONNS connections per worker
#                 (workers 2: 2 x CONNS): the same load on each loop, so
#                 what sharing costs is told from what smaller batches
#                 per loop cost (fewer events per epoll_wait)
set -euo pipefail
cd "$(dirname "$0")/../.."
. deploy/lib.sh
. deploy/bench/bench-lib.sh
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
PER_WORKER=${PER_WORKER:-0}
ORIGIN_PORT=${ORIGIN_PORT:-18091}
BASE_PORT=${BASE_PORT:-23200}

bench_build
bench_workdir workers-bench
# the origin beside wrk, off the measured core: a miss's origin work is
# not the node's
NGINX_CPU=0
mkdir -p "$work/www"
for s in 1 16 256; do head -c $((s * 1024)) /dev/urandom >"$work/www/${s}k.bin"; done
bench_nginx "$ORIGIN_PORT" "    location / { add_header Cache-Control \"max-age=3600\"; }
    location /nostore/ { alias $work/www/; add_header Cache-Control \"no-store\"; }"
origin="http://127.0.0.1:$ORIGIN_PORT"

# node NAME PORT WORKERS CPUS -> its pid in pid_of[NAME]
declare -A pid_of
node() {
  local name=$1 port=$2 workers=$3 cpus=$4
  taskset -c "$cpus" build-bench/sumcache -o http_listen=127.0.0.1:$port \
    -o access_log=none -o cache_mem=512MB -o workers="$workers" \
    >"$work/$name.log" 2>&1 &
  pids+=($!)
  pid_of[$name]=$!
  wait_port "$port"
}
stop() { # NAME
  kill "${pid_of[$1]}"
  wait "${pid_of[$1]}" 2>/dev/null || true
}
warm() { # PORT
  for s in 1 16 256; do bench_warm workers-bench "$1" "$origin/${s}k.bin"; done
}

lua() {
  cat >"$work/req.lua" <<EOL
init = function(args)
  wrk.path = "$1"
  wrk.headers["Host"] = "127.0.0.1:$ORIGIN_PORT"
end
EOL
  echo "$work/req.lua"
}

# run NAME PORT TARGET PID WRKCPUS THREADS [CONNS] -> "name rps p50 p99
# cpu_s_per_10k"
run() {
  local name=$1 port=$2 target=$3 pid=$4 cpus=$5 threads=$6 out t0 t1
  local conns=${7:-$CONNS}
  t0=$(bench_ticks "$pid")
  out=$(taskset -c "$cpus" wrk -t"$threads" -c"$conns" -d"${DURATION}s" \
    --latency -s "$(lua "$target")" "http://127.0.0.1:$port" 2>&1)
  t1=$(bench_ticks "$pid")
  wrk_line "$name" <<<"$out" | awk -v dt=$((t1 - t0)) -v hz="$BENCH_HZ" '
    { printf "%s %s %s %s %.3f\n", $1, $2, $3, $4, (dt / hz) / ($5 / 10000) }'
}

metric() { # port series
  curl -s "http://127.0.0.1:$1/metrics" | awk -v s="$2" '$1 == s { print $2 }'
}

results="$work/results.txt"
: >"$results"
orders=("1 2 4" "2 4 1" "4 1 2")
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  for w in ${orders[$(((r - 1) % 3))]}; do
    port=$((BASE_PORT + w))
    c=$CONNS
    [ "$PER_WORKER" = 1 ] && c=$((CONNS * w))
    # each run on a node of its own, after a second of the same load
    # unmeasured: a fresh node's workers each fault in their own
    # allocator arena and buffers, and the origin connections open,
    # which a first run would charge to workers 4 four times; and no run
    # inherits the heap another workload left
    for s in 1 16 256 miss; do
      node w$w $port "$w" 1
      pid=${pid_of[w$w]}
      if [ $s = miss ]; then
        name=miss1k url="$origin/nostore/1k.bin"
      else
        name=hit${s}k url="$origin/${s}k.bin"
        bench_warm workers-bench $port "$url"
      fi
      DURATION=1 run warm $port "$url" "$pid" 0 1 $c >/dev/null
      run "${name}_w$w" $port "$url" "$pid" 0 1 $c >>"$results"
      stop w$w
    done
  done
done
node both1 $((BASE_PORT + 11)) 1 0,1
node both2 $((BASE_PORT + 12)) 2 0,1
warm $((BASE_PORT + 11))
warm $((BASE_PORT + 12))
for r in $(seq "$ROUNDS"); do
  for w in 1 2; do
    run "both_hit1k_w$w" $((BASE_PORT + 10 + w)) "$origin/1k.bin" \
      "${pid_of[both$w]}" 0,1 2 $((CONNS < 2 ? 2 : CONNS)) >>"$results"
  done
done
stop both1
stop both2
# the hot key under 8 workers on 2 cores: lock waits over one run
port=$((BASE_PORT + 18))
node hot8 $port 8 0,1
warm $port
w0=$(metric $port sumcache_store_lock_waits_total)
s0=$(metric $port sumcache_store_lock_wait_seconds_total)
run hot1k_w8 $port "$origin/1k.bin" "${pid_of[hot8]}" 0,1 2 $((CONNS < 2 ? 2 : CONNS)) >"$work/hot.txt"
w1=$(metric $port sumcache_store_lock_waits_total)
s1=$(metric $port sumcache_store_lock_wait_seconds_total)
read -r _ hot_rps _ _ _ <"$work/hot.txt"

awk -v rounds="$ROUNDS" -v dur="$DURATION" -v conns="$CONNS" -v perw="$PER_WORKER" "$BENCH_MEDIAN_AWK"'
  { rps[$1] = rps[$1] " " $2; p99[$1] = p99[$1] " " $4; cpu[$1] = cpu[$1] " " $5
    at[$1, ++seen[$1]] = $5 }
  # the median of each round'"'"'s own ratio: a round'"'"'s nodes run minutes
  # apart at most, so the machine'"'"'s drift between rounds cancels
  function paired(a, b,   r, s) {
    for (r = 1; r <= seen[a]; r++) s = s " " at[a, r] / at[b, r]
    return median(s) }
  END {
    printf "workers-bench: %d interleaved rounds, wrk -c%d -d%ds, medians\n\n", rounds, conns, dur
    printf "one core (one node at a time on CPU 1, wrk and the origin on CPU 0): CPU s per 10,000 requests%s\n", perw ? "; connections: CONNS x workers" : ""
    printf "(ratios: the median of each round'"'"'s own)\n"
    printf "%-8s %10s %10s %10s %12s %12s\n", "run", "workers 1", "workers 2", "workers 4", "w2 / w1", "w4 / w1"
    n = split("hit1k hit16k hit256k miss1k", k, " ")
    for (i = 1; i <= n; i++) {
      c1 = median(cpu[k[i] "_w1"]); c2 = median(cpu[k[i] "_w2"]); c4 = median(cpu[k[i] "_w4"])
      printf "%-8s %10.3f %10.3f %10.3f %12.3f %12.3f\n", k[i], c1, c2, c4,
        paired(k[i] "_w2", k[i] "_w1"), paired(k[i] "_w4", k[i] "_w1")
    }
    printf "\n%-8s %10s %10s %10s\n", "req/s", "workers 1", "workers 2", "workers 4"
    for (i = 1; i <= n; i++)
      printf "%-8s %10.0f %10.0f %10.0f\n", k[i], median(rps[k[i] "_w1"]), median(rps[k[i] "_w2"]), median(rps[k[i] "_w4"])
    printf "\nboth cores, wrk -t2 sharing them: 1 KB hits\n"
    for (w = 1; w <= 2; w++) {
      key = "both_hit1k_w" w
      printf "  workers %d: %8.0f req/s, p99 %.3f ms, %.3f CPU s/10k\n", w, median(rps[key]), median(p99[key]), median(cpu[key])
    }
    printf "  workers 2 / workers 1: %.2fx the requests\n", median(rps["both_hit1k_w2"]) / median(rps["both_hit1k_w1"])
  }' "$results"
awk -v w="$((${w1%.*} - ${w0%.*}))" -v s0="$s0" -v s1="$s1" -v rps="$hot_rps" -v d="$DURATION" 'BEGIN {
  n = rps * d
  printf "\nhot key, workers 8 on 2 cores: %.0f req/s; store lock waits %d in %.0f requests (%.4f%% of lookups), %.1f us waited per 10,000 requests\n",
    rps, w, n, 100 * w / n, (s1 - s0) * 1e6 / (n / 10000) }'
echo
echo "raw rounds: $results"
