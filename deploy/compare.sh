#!/usr/bin/env bash
# The paper's table for one trace: replays it against an N-node cluster
# under no sharing, ICP and Summary Cache (and, asked for, placement hash:
# carp and summary+hash), and compares them.
#
#   deploy/compare.sh TRACE [N] [--concurrency C] [--cache-mem SIZE]
#                               [--origin-latency MS]
#                               [--modes "none icp summary carp summary+hash"]
#                               [--out DIR] [--membership]
#
# TRACE is a Squid native access.log (deploy/workload/workload_gen.c writes
# one; a real log works too, see replay.c). For each mode a fresh cluster
# (deploy/cluster.sh, N = 4 by default) and origin are started, the trace is
# replayed through it (client c through node c mod N, every body checked),
# then every node's /metrics, the nodes' CPU time and the origin's counts are
# read. Prints the table and the ICP / summary ratios; writes compare.csv,
# the raw scrapes and, with gnuplot installed, compare.svg to DIR
# (run/compare). The origin answers after --origin-latency ms (10), as a
# real one far away does: on loopback with none, a peer's copy would be no
# faster than the origin's. Capacity misses are the origin's repeat fetches
# (demo_origin.c): a cacheable object sent whole again, not to a
# revalidation.
#
# --membership runs, instead of the table, the membership experiment: each
# mode replays the trace twice in five parts, on N nodes (the baseline) and
# on N + 1 nodes of which the last, with no clients of its own, is down at
# first, started at a third of the trace and stopped at two thirds. The
# origin requests in the 10,000 requests after each change, less the
# baseline's over the same requests, are what the change cost
# (membership.csv).
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/lib.sh

trace="" n=4 conc=16 cache_mem=64MB out=run/compare latency=10
modes="none icp summary" membership=0
while [ $# -gt 0 ]; do
  case $1 in
    --concurrency) conc=${2:?}; shift ;;
    --cache-mem) cache_mem=${2:?}; shift ;;
    --origin-latency) latency=${2:?}; shift ;;
    --modes) modes=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    --membership) membership=1 ;;
    -*) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    *) if [ -z "$trace" ]; then trace=$1; else n=$1; fi ;;
  esac
  shift
done
[ -f "$trace" ] || { echo "compare: no trace file '$trace'" >&2; exit 2; }
build=${SUMCACHE_BUILD:-build}
ensure_built "$build"
state=${SUMCACHE_CLUSTER_DIR:-run/cluster}
export SUMCACHE_CLUSTER_DIR=$state SUMCACHE_BUILD=$build
# a step that fails leaves no cluster behind
trap './deploy/cluster.sh down >/dev/null 2>&1 || true' EXIT
mkdir -p "$out"
rm -f "$out"/*.metrics "$out"/*.replay "$out"/*.origin "$out"/*.cpu
tick=$(getconf CLK_TCK)

# cpu_seconds PID: user + system time of a running process
cpu_seconds() {
  awk -v t="$tick" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / t }' \
    "/proc/$1/stat"
}

# origin_requests: the demo origin's count so far
origin_requests() {
  curl -s --noproxy '*' -m 5 "http://$(cat "$state/origin")/__stats" |
    awk '$1 == "demo_origin_requests_total" { print $2 }'
}

# membership_run MODE CHANGE: the trace in five parts, the cluster changed
# between them when CHANGE is 1; prints "join join_third leave
# leave_third wrong errors": the origin requests in the window after each
# change point and up to the next (a change CARP notices late costs it
# there), and the replay's wrong bodies and errors over all parts
# (the trace's cut points: total, cut1, cut2 and window, set below)
membership_run() {
  local mode=$1 change=$2 nodes proxies
  nodes=$((n + change))
  ./deploy/cluster.sh down >/dev/null 2>&1 || true
  ./deploy/cluster.sh up "$nodes" --mode "$mode" --cache-mem "$cache_mem" \
    --origin-latency "$latency" >/dev/null
  [ "$change" = 0 ] || ./deploy/cluster.sh stop "n$nodes" >/dev/null
  # the first N nodes take the clients; the one that joins has none
  proxies=$(awk -v n="$n" 'NR <= n { printf "%shttp://%s:%s", (NR > 1 ? "," : ""), $2, $3 }' \
    "$state/nodes")
  # part k starts at from[k] with count[k] requests; at[k]: the origin's
  # count before it (at[6]: after the last)
  local from=(- 0 "$cut1" $((cut1 + window)) "$cut2" $((cut2 + window)))
  local count=(- "$cut1" "$window" $((cut2 - cut1 - window)) "$window" \
    $((total - cut2 - window)))
  local at=() k wrong=0 errors=0
  for k in 1 2 3 4 5; do
    if [ "$change" = 1 ] && [ "$k" = 2 ]; then
      ./deploy/cluster.sh start "n$nodes" >/dev/null
    elif [ "$change" = 1 ] && [ "$k" = 4 ]; then
      ./deploy/cluster.sh stop "n$nodes" >/dev/null
    fi
    at[k]=$(origin_requests)
    : >"$out/part.replay"
    if [ "${count[k]}" -gt 0 ]; then  # (-n 0 would be the rest of the trace)
      # (its status says a body was wrong: counted below)
      "$build/replay" -o "$(cat "$state/origin")" -p "$proxies" -c "$conc" \
        -s "${from[k]}" -n "${count[k]}" "$trace" >"$out/part.replay" 2>"$out/part.err" || true
      grep -qx "requests=${count[k]}" "$out/part.replay" ||
        { echo "compare: $mode: the replay of part $k failed:" >&2; cat "$out/part.err" >&2; exit 1; }
    fi
    wrong=$((wrong + $(awk -F= '$1 == "wrong_bodies" { v = $2 } END { print v + 0 }' "$out/part.replay")))
    errors=$((errors + $(awk -F= '$1 == "errors" { v = $2 } END { print v + 0 }' "$out/part.replay")))
  done
  at[6]=$(origin_requests)
  rm -f "$out/part.replay" "$out/part.err"
  ./deploy/cluster.sh down >/dev/null
  echo "$((at[3] - at[2])) $((at[4] - at[2])) $((at[5] - at[4])) $((at[6] - at[4])) $wrong $errors"
}

if [ "$membership" = 1 ]; then
  total=$(wc -l <"$trace")
  [ "$total" -ge 3 ] ||
    { echo "compare: --membership needs a trace of 3 requests at least" >&2; exit 2; }
  cut1=$((total / 3)) cut2=$((2 * total / 3))
  window=$((cut1 < 10000 ? cut1 : 10000))
  mcsv=$out/membership.csv
  echo "mode,join_base,join,join_extra,join_third_extra,leave_base,leave,leave_extra,leave_third_extra,wrong_bodies,errors" >"$mcsv"
  for mode in $modes; do
    [ "$mode" != none ] && [ "$mode" != icp ] ||
      { echo "compare: --membership: $mode has no placement to change; skipped" >&2; continue; }
    echo "compare: $mode: membership experiment on $n + 1 nodes" >&2
    base=$(membership_run "$mode" 0)  # (a failed run stops the script)
    changed=$(membership_run "$mode" 1)
    read -r bj bj3 bl bl3 bw be <<<"$base"
    read -r cj cj3 cl cl3 cw ce <<<"$changed"
    echo "$mode,$bj,$cj,$((cj - bj)),$((cj3 - bj3)),$bl,$cl,$((cl - bl)),$((cl3 - bl3)),$((bw + cw)),$((be + ce))" >>"$mcsv"
  done
  echo
  echo "$total log lines, $n nodes (+1 joining at 1/3, leaving at 2/3), cache_mem $cache_mem each"
  awk -F, '{ printf "%-13s", $1; for (i = 2; i <= NF; i++) printf " %s", $i; printf "\n" }' "$mcsv" |
    awk '{ printf "%-13s", $1; for (i = 2; i <= NF; i++) printf " %17s", $i; printf "\n" }'
  echo "(origin requests in the $window requests after each change, and to the next change (third); extra = with the change less without)"
  echo "CSV: $mcsv"
  exit 0
fi

for mode in $modes; do
  ./deploy/cluster.sh down >/dev/null 2>&1 || true
  ./deploy/cluster.sh up "$n" --mode "$mode" --cache-mem "$cache_mem" \
    --origin-latency "$latency" >/dev/null
  origin=$(cat "$state/origin")
  proxies=$(awk '{ printf "%shttp://%s:%s", (NR > 1 ? "," : ""), $2, $3 }' \
    "$state/nodes")
  echo "compare: $mode: replaying $trace through $n nodes" >&2
  "$build/replay" -o "$origin" -p "$proxies" -c "$conc" "$trace" \
    >"$out/$mode.replay" || true  # wrong bodies and errors are in the table
  sleep 1  # the last summaries and log lines settle
  : >"$out/$mode.cpu"
  while read -r name host port _ pid _; do
    curl -s --noproxy '*' -m 5 "http://$host:$port/metrics" \
      >"$out/$mode.$name.metrics"
    echo "$name $(cpu_seconds "$pid")" >>"$out/$mode.cpu"
  done <"$state/nodes"
  curl -s --noproxy '*' -m 5 "http://$origin/__stats" >"$out/$mode.origin"
  ./deploy/cluster.sh down >/dev/null
done

# One CSV row per mode, from the scrapes. Inter-proxy traffic per type is
# the larger of what all nodes sent and received of it: a summary push is
# counted by both ends, a peer request only by the node that asked (and
# its response only where it arrived), so the larger side counts each
# message once.
csv=$out/compare.csv
echo "mode,requests,local_hit_pct,remote_hit_pct,total_hit_pct,protocol_messages,protocol_bytes,peer_requests,peer_response_bytes,false_hits,origin_requests,cpu_seconds,p50_ms,p99_ms,wrong_bodies,errors,summary_msgs,summary_bytes,digest_msgs,digest_bytes,icp_msgs,icp_bytes,icp_queries,capacity_misses" >"$csv"
for mode in $modes; do
  cat "$out/$mode".n*.metrics | awk -v mode="$mode" \
      -v replay="$out/$mode.replay" -v origin="$out/$mode.origin" \
      -v cpufile="$out/$mode.cpu" '
    function label(s, k,   i, r) {
      i = index(s, k "=\""); if (i == 0) return ""
      r = substr(s, i + length(k) + 2); return substr(r, 1, index(r, "\"") - 1)
    }
    /^sumcache_requests_total\{/ { req[label($1, "result")] += $2 }
    /^sumcache_peer_false_hits_total / { fh += $2 }
    /^sumcache_interproxy_(messages|bytes)_total\{/ {
      what = ($1 ~ /messages/) ? "m" : "b"
      tot[what, label($1, "type"), label($1, "direction")] += $2
      types[label($1, "type")] = 1
    }
    END {
      while ((getline l < replay) > 0) { split(l, kv, "="); rp[kv[1]] = kv[2] }
      while ((getline l < origin) > 0) {
        split(l, f, " ")
        if (l ~ /^demo_origin_requests_total /) oreq = f[2]
        if (l ~ /^demo_origin_repeat_fetches_total /) repeats = f[2]
      }
      while ((getline l < cpufile) > 0) { split(l, f, " "); cpu += f[2] }
      for (t in types) {
        m[t] = tot["m", t, "sent"] > tot["m", t, "received"] ? tot["m", t, "sent"] : tot["m", t, "received"]
        b[t] = tot["b", t, "sent"] > tot["b", t, "received"] ? tot["b", t, "sent"] : tot["b", t, "received"]
        if (t != "peer_request" && t != "peer_response") { pm += m[t]; pb += b[t] }
      }
      n = req["local_hit"] + req["remote_hit"] + req["miss"] + req["error"]
      d = n > 0 ? n : 1
      # %.0f, not %d: in mawk %d stops at 2^31 - 1, and byte counts pass it
      printf "%s,%.0f,%.2f,%.2f,%.2f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.2f,%.3f,%.3f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f\n",
        mode, n, 100 * req["local_hit"] / d, 100 * req["remote_hit"] / d,
        100 * (req["local_hit"] + req["remote_hit"]) / d, pm, pb,
        m["peer_request"], b["peer_response"], fh, oreq, cpu,
        rp["latency_p50_ms"], rp["latency_p99_ms"], rp["wrong_bodies"], rp["errors"],
        m["summary_full"] + m["summary_delta"] + m["summary_pull"],
        b["summary_full"] + b["summary_delta"] + b["summary_pull"],
        m["squid_digest"], b["squid_digest"],
        m["icp_query"] + m["icp_reply"], b["icp_query"] + b["icp_reply"],
        m["icp_query"], repeats
    }' >>"$csv"
done

echo
echo "$(wc -l <"$trace") log lines, $n nodes, cache_mem $cache_mem each, concurrency $conc, origin latency ${latency} ms"
awk -F, '
  NR == 1 { next }
  { for (i = 1; i <= NF; i++) v[$1, i] = $i; order[++k] = $1 }
  END {
    printf "%-26s", ""; for (j = 1; j <= k; j++) printf " %14s", order[j]
    if (("icp", 1) in v && ("summary", 1) in v) printf " %14s", "icp/summary"
    printf "\n"
    split("2:client requests|3:local hit %|4:remote hit %|5:total hit %|6:protocol messages|7:protocol bytes|17:  summary messages|18:  summary bytes|21:  ICP messages|22:  ICP bytes|8:peer requests|9:peer response bytes|10:false hits|11:origin requests|24:  capacity misses|12:proxy CPU seconds|13:latency p50 ms|14:latency p99 ms|15:wrong bodies|16:errors", rows, "|")
    for (r = 1; r <= length(rows); r++) {
      split(rows[r], rc, ":"); c = rc[1]
      printf "%-26s", rc[2]
      for (j = 1; j <= k; j++) printf " %14s", v[order[j], c]
      if (("icp", 1) in v && ("summary", 1) in v) {
        s = v["summary", c] + 0; i = v["icp", c] + 0
        if (c == 3 || c == 4 || c == 5) printf " %+13.2fpt", i - s
        else if (s > 0) printf " %13.1fx", i / s
        else printf " %14s", (i > 0 ? "inf" : "-")
      }
      printf "\n"
    }
  }' "$csv"
echo "(protocol = summaries, digests and ICP; peer requests are the object fetches between nodes)"
echo "CSV: $csv"

if command -v gnuplot >/dev/null; then
  gnuplot <<EOT
set terminal svg size 900,420 dynamic font "sans,12"
set output "$out/compare.svg"
set datafile separator ","
set multiplot layout 1,2 title "$(basename "$trace"): $n nodes"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.7
set key off
set grid ytics
set title "inter-proxy protocol messages"
plot "$csv" every ::1 using 6:xtic(1) lc rgb "#4477aa"
set title "total hit ratio (%)"
set yrange [0:100]
plot "$csv" every ::1 using 5:xtic(1) lc rgb "#228833"
unset multiplot
EOT
  echo "chart: $out/compare.svg"
fi
