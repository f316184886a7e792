#!/usr/bin/env bash
# The replay report end to end: a 3-node cluster replays a small synthetic
# trace through deploy/compare.sh under none, icp and summary, and the
# report must add up. Run by tests/run.sh after the build; BUILD names the
# build directory (build-test).
#   - every mode served exactly the trace's requests, with no wrong body
#     and no error;
#   - none: no inter-proxy traffic and no remote hit;
#   - icp and summary: remote hits; ICP sent queries and no summaries,
#     summary sent summaries and no ICP;
#   - summary mode asked peers for objects no more often than ICP sent
#     queries, and sent fewer protocol messages than ICP.
# Then deploy/cluster.sh itself, on loopback and with --netns (one
# network namespace per node): 2 nodes up, a 300-request replay with every
# body right, status shows both nodes up with the requests each served,
# a 20-line log of real URLs replays as demo objects with every body
# right, down leaves no process and no namespace. Then compare.sh
# --membership on carp and summary+hash: a row each, every body right, and
# the node that joined served as an owner.
# Prints "cluster-check: P passed, F failed".
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/checks.sh cluster-check

"$build/workload-gen" --requests 3000 --objects 3000 --proxies 3 \
  --seed 7 >"$dir/trace.log" 2>/dev/null
lines=$(wc -l <"$dir/trace.log")

SUMCACHE_BUILD=$build SUMCACHE_CLUSTER_DIR=$dir/cluster \
  SUMCACHE_BASE_PORT=23128 SUMCACHE_ORIGIN_PORT=28081 \
  ./deploy/compare.sh "$dir/trace.log" 3 --cache-mem 16MB --origin-latency 0 --out "$dir" \
  >"$dir/report.txt" 2>&1
rc=$?
cat "$dir/report.txt"
if [ $rc -ne 0 ] || [ ! -s "$dir/compare.csv" ]; then
  echo "cluster-check: compare.sh failed (status $rc)"
  echo "cluster-check: 0 passed, 1 failed"
  exit 1
fi

awk -F, -v lines="$lines" '
  function check(ok, what) {
    if (ok) pass++; else { fail++; print "cluster-check: FAILED: " what }
  }
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { for (k in col) v[$1, k] = $col[k]; seen[$1] = 1 }
  END {
    split("none icp summary", modes, " ")
    for (i = 1; i <= 3; i++) {
      m = modes[i]
      check(m in seen, m ": a row")
      check(v[m, "requests"] == lines, m ": requests " v[m, "requests"] " = trace " lines)
      check(v[m, "wrong_bodies"] == 0, m ": no wrong body (" v[m, "wrong_bodies"] ")")
      check(v[m, "errors"] == 0, m ": no error (" v[m, "errors"] ")")
    }
    check(v["none", "protocol_messages"] == 0 && v["none", "peer_requests"] == 0,
      "none: no inter-proxy traffic")
    check(v["none", "remote_hit_pct"] == 0, "none: no remote hit")
    check(v["icp", "remote_hit_pct"] > 0, "icp: remote hits")
    check(v["summary", "remote_hit_pct"] > 0, "summary: remote hits")
    check(v["icp", "icp_queries"] > 0 && v["icp", "summary_msgs"] == 0,
      "icp: queries, no summaries")
    check(v["summary", "summary_msgs"] > 0 && v["summary", "icp_msgs"] == 0,
      "summary: summaries, no ICP")
    check(v["summary", "peer_requests"] <= v["icp", "icp_queries"],
      "summary peer requests " v["summary", "peer_requests"] " <= ICP queries " v["icp", "icp_queries"])
    check(v["summary", "protocol_messages"] < v["icp", "protocol_messages"],
      "summary sends fewer protocol messages than ICP")
    printf "report %d %d\n", pass, fail
  }' "$dir/compare.csv" >"$dir/report.checks"
read -r _ checks_pass checks_fail <"$dir/report.checks"


# cluster_round NAME [up options]: up, replay, status, down
cluster_round() {
  local name=$1 state=$dir/$1
  shift
  export SUMCACHE_BUILD=$build SUMCACHE_CLUSTER_DIR=$state \
    SUMCACHE_BASE_PORT=23128 SUMCACHE_ORIGIN_PORT=28081
  if ! ./deploy/cluster.sh up 2 "$@" >"$dir/$name.up" 2>&1; then
    cat "$dir/$name.up"
    check "$name: up" false
    ./deploy/cluster.sh down >/dev/null 2>&1
    return
  fi
  check "$name: up" true
  local proxies
  proxies=$(awk '{ printf "%shttp://%s:%s", (NR > 1 ? "," : ""), $2, $3 }' \
    "$state/nodes")
  head -n 300 "$dir/trace.log" >"$dir/$name.trace"
  check "$name: 300 requests replayed, every body right" \
    "$build/replay" -o "$(cat "$state/origin")" -p "$proxies" \
    "$dir/$name.trace" >"$dir/$name.replay" 2>&1
  ./deploy/cluster.sh status >"$dir/$name.status" 2>&1
  cat "$dir/$name.status"
  check "$name: status shows 2 nodes up serving 300 requests" \
    awk '$3 == "up" { n++; r += $4 } END { exit !(n == 2 && r == 300) }' \
    "$dir/$name.status"
  # a real log's URLs (other hosts, sizes from the log) are replayed as
  # demo objects of those sizes, every body checked
  for i in $(seq 1 10); do for c in 1 2; do
    echo "1700000000.$i 0 10.2.0.$c TCP_MISS/200 $((i * 1500)) GET" \
      "http://www.example.com/img/$i.png - HIER_DIRECT/192.0.2.1 image/png"
  done; done >"$dir/$name.real"
  "$build/replay" -o "$(cat "$state/origin")" -p "$proxies" \
    "$dir/$name.real" >"$dir/$name.real.out" 2>&1
  check "$name: a real log's 20 requests replayed, every body right" \
    test $? -eq 0
  check "$name: ... all 20 answered" grep -qx "ok=20" "$dir/$name.real.out"
  local pids
  pids=$(awk '{ print $5 }' "$state/nodes")
  ./deploy/cluster.sh down >/dev/null 2>&1
  local left=0
  for p in $pids; do kill -0 "$p" 2>/dev/null && left=1; done
  check "$name: down stops every node" test "$left" = 0
  check "$name: down removes the namespaces" \
    test -z "$(ip netns list 2>/dev/null | grep '^sumcache-n')"
}

# The membership experiment: carp and summary+hash, each replayed on 3
# nodes and on 4 whose last joins at a third and leaves at two thirds.
SUMCACHE_BUILD=$build SUMCACHE_CLUSTER_DIR=$dir/members \
  SUMCACHE_BASE_PORT=23128 SUMCACHE_ORIGIN_PORT=28081 \
  ./deploy/compare.sh "$dir/trace.log" 3 --cache-mem 16MB --origin-latency 0 \
  --modes "carp summary+hash" --membership --out "$dir/members-out" \
  >"$dir/members.txt" 2>&1
check "membership: compare.sh --membership runs" test $? -eq 0
cat "$dir/members.txt"
check "membership: a row for carp and one for summary+hash" \
  awk -F, 'NR > 1 { m[$1] = 1 } END { exit !(("carp" in m) && ("summary+hash" in m)) }' \
  "$dir/members-out/membership.csv"
check "membership: every body right and no error, over all eight replays" \
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["wrong_bodies"] != 0 || $c["errors"] != 0 { bad = 1 }
    END { exit bad || NR < 3 }' "$dir/members-out/membership.csv"
# the last run is summary+hash's with the change: the fourth node, once
# its summary arrived, owned a share of the keys and fetched them
check "membership: the node that joined served the others as an owner" \
  test -s "$dir/members/n4.access.log"

cluster_round loopback --mode summary
cluster_round netns --mode summary --netns
unset SUMCACHE_CLUSTER_DIR

checks_done cluster-check
