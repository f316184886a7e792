# What the benchmarks share (sourced, after deploy/lib.sh): a Release
# build in build-bench, a scratch directory whose servers are stopped on
# exit, and wrk's report reduced to one line.

# bench_build: installs what is missing and builds build-bench.
bench_build() {
  ./deploy/bootstrap.sh >/dev/null
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSUMCACHE_TESTS=OFF >/dev/null
  cmake --build build-bench -j"$(nproc)" >/dev/null
}

# bench_workdir NAME: $work, a fresh directory; every pid added to $pids
# is stopped on exit, then bench_cleanup_more runs if defined.
bench_workdir() {
  work=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$work"
  pids=()
  trap bench_cleanup EXIT
}
bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if declare -F bench_cleanup_more >/dev/null; then bench_cleanup_more; fi
}

# bench_nginx PORT LOCATIONS: nginx on CPU $NGINX_CPU (default 1) serving
# $work/www on 127.0.0.1:PORT, LOCATIONS (nginx lines) in its server block,
# its pid in $work/nginx.pid; returns once it listens.
bench_nginx() {
  cat >"$work/nginx.conf" <<EON
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$1 reuseport;
    root $work/www;
$2
  }
}
EON
  taskset -c "${NGINX_CPU:-1}" nginx -c "$work/nginx.conf" &
  pids+=($!)
  wait_port "$1"
}

# wrk_line NAME < wrk --latency output: "NAME req/s p50_ms p99_ms requests",
# or a failure when any response was not 2xx.
wrk_line() {
  awk -v name="$1" '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
                     if (v ~ /s$/) return v * 1000; return v }
    /^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
    /requests in/ { n = $1 }
    /^Requests\/sec:/ { rps = $2 }
    /Non-2xx/ { bad = $NF }
    END { if (bad > 0) { print "bench: " name ": " bad " non-2xx" > "/dev/stderr"; exit 1 }
          printf "%s %.0f %.3f %.3f %d\n", name, rps, p50, p99, n }'
}

# bench_warm NAME PORT URL [CURL OPTIONS]: fetches URL through the proxy
# on PORT twice and fails the benchmark (naming NAME) unless the second
# answer says X-Cache: HIT, so a run measures hits, not misses.
bench_warm() {
  local name=$1 port=$2 url=$3 hit
  shift 3
  curl -s -o /dev/null --proxy "127.0.0.1:$port" "$@" "$url"
  hit=$(curl -s -o /dev/null -D - --proxy "127.0.0.1:$port" "$@" "$url" |
    tr -d '\r' | grep -i '^X-Cache:' || true)
  case "$hit" in
    *HIT*) ;;
    *) echo "$name: $url is not a hit on port $port ($hit)" >&2; exit 1 ;;
  esac
}

# bench_ticks PID: the CPU time (user + system) PID has used, in clock
# ticks, $BENCH_HZ to a second.
bench_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
BENCH_HZ=$(getconf CLK_TCK)

# An awk function for reports: median(" a b c") of space-separated values.
BENCH_MEDIAN_AWK='
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }'

# bench_can_drop: whether this user can empty the page cache (root), for
# the runs from a cold one; bench_drop empties it, dirty pages first.
bench_can_drop() { sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; }
bench_drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
