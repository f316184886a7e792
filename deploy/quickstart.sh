#!/usr/bin/env bash
# Fresh Debian 12 to a running sumcache in one command: installs what is
# missing, builds, starts sumcache on 127.0.0.1:3128 with its defaults and a
# small local origin on 127.0.0.1:8081, shows a miss and a hit, and leaves
# both running. Stop them with:  ./deploy/quickstart.sh stop
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/lib.sh
run=run
mkdir -p "$run"

stop() {
  for p in sumcache origin; do
    if [ -f "$run/$p.pid" ]; then
      kill "$(cat "$run/$p.pid")" 2>/dev/null || true
      rm -f "$run/$p.pid"
    fi
  done
}

if [ "${1:-}" = stop ]; then
  stop
  echo "quickstart: stopped"
  exit 0
fi

./deploy/bootstrap.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
stop


build/tests/test-origin 8081 >"$run/origin.log" 2>&1 &
echo $! >"$run/origin.pid"
build/sumcache -o access_log="$run/access.log" >"$run/sumcache.log" 2>&1 &
echo $! >"$run/sumcache.pid"
wait_port 8081
wait_port 3128

url="http://127.0.0.1:8081/obj/hello?max_age=300&size=2048"
echo "quickstart: sumcache is listening on 127.0.0.1:3128"
for i in 1 2; do
  printf '  request %d: ' "$i"
  curl -s -o /dev/null -D - -x http://127.0.0.1:3128 "$url" |
    tr -d '\r' | grep -E '^X-Cache:'
done
sleep 0.3
echo "  access log ($run/access.log):"
sed 's/^/    /' "$run/access.log"
echo "  metrics:"
curl -s http://127.0.0.1:3128/metrics |
  grep -E '^sumcache_(requests_total|cache_objects)' | sed 's/^/    /'
cat <<EOT

Use it:
  curl -x http://127.0.0.1:3128 http://127.0.0.1:8081/obj/any?max_age=60
  export http_proxy=http://127.0.0.1:3128 https_proxy=http://127.0.0.1:3128
  chromium --proxy-server=http://127.0.0.1:3128
  curl http://127.0.0.1:3128/metrics
Configuration: build/sumcache --help   (check a file: build/sumcache -t -c FILE)
Stop: ./deploy/quickstart.sh stop
EOT
