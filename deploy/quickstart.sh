#!/usr/bin/env bash
# Fresh Debian 12 to a running sumcache cluster in one command: installs
# what is missing, builds, starts a 3-node Summary Cache cluster with the
# demo origin (deploy/cluster.sh), each node with a disk tier in run/cache/, replays a short synthetic workload
# through it with every body checked, prints what the cluster did, and
# leaves it running for a browser or curl.
#   ./deploy/quickstart.sh        start (again)
#   ./deploy/cluster.sh down      stop it (./deploy/quickstart.sh stop too)
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/lib.sh

if [ "${1:-}" = stop ]; then
  exec ./deploy/cluster.sh down
fi

build=${SUMCACHE_BUILD:-build}
state=${SUMCACHE_CLUSTER_DIR:-run/cluster}
export SUMCACHE_BUILD=$build SUMCACHE_CLUSTER_DIR=$state
./deploy/bootstrap.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

./deploy/cluster.sh down >/dev/null 2>&1 || true
# each node keeps a 256 MB disk tier in run/cache/: run this again and the
# nodes start with what they had (a warm restart)
./deploy/cluster.sh up 3 --mode summary --origin-latency 10 --cache-dir 256MB
origin=$(cat "$state/origin")
proxies=$(awk '{ printf "%shttp://%s:%s", (NR > 1 ? "," : ""), $2, $3 }' \
  "$state/nodes")

echo
echo "quickstart: replaying a demo workload (10,000 requests from 24 clients,"
echo "            client c through node c mod 3; every body checked)"
"$build/workload-gen" --requests 10000 --objects 6000 --clients 24 \
  --proxies 3 >"$state/demo-trace.log" 2>/dev/null
"$build/replay" -o "$origin" -p "$proxies" -c 16 "$state/demo-trace.log" |
  grep -E '^(requests|ok|wrong_bodies|errors|latency)' | sed 's/^/  /'
sleep 1
echo
./deploy/cluster.sh status
n1=$(awk 'NR == 1 { print $2 ":" $3 }' "$state/nodes")
cat <<EOT

The cluster keeps running. Point a client at any node:
  curl -x http://$n1 "http://$origin/any/path?size=5000&max_age=600"
  chromium --proxy-server=http://$n1 --proxy-bypass-list='<-loopback>'
  export http_proxy=http://$n1 https_proxy=http://$n1
  (<-loopback>: without it Chromium sends 127.0.0.1, the demo origin, direct)
Watch it in a browser:  http://$n1/sumcache/status   (every node has one)
  or:  ./deploy/cluster.sh status      curl http://$n1/metrics
Compare none, ICP and Summary Cache on a trace:
  $build/workload-gen --requests 50000 > trace.log
  ./deploy/compare.sh trace.log 4
Stop:  ./deploy/cluster.sh down
EOT
