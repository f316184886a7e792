#!/usr/bin/env bash
# Sizing a cluster larger than this machine: sumcache-sim on synthetic
# traces (workload-gen, piped: no trace file), three sweeps.
#   deploy/simulate.sh [--per-proxy R] [--proxies "4 8 ... 256"] [--out DIR]
#   1. proxies: for each N a trace of R x N requests (R = 20000) from 4N
#      clients over R x N / 2 objects; none, icp and summary (1 %, 16 bits
#      per entry): hit ratios, protocol messages and bytes per request
#   2. threshold: 8 proxies, 200,000 requests each (caches of ~12,000
#      objects, so 0.1 % is still 12 changes): 0.1 % to 10 %, against ICP
#   3. bits per entry, on the same trace: 8, 16, 32 at 1 %, filters sized
#      for each proxy's mean object (sumcache sizes for 2 KB objects, which
#      gives these 9 KB objects several times the bits), the summaries'
#      false positives against the Bloom formula
# Each proxy's cache is 10 % of its infinite cache (the bytes of the
# distinct objects its clients ask for). Prints the tables; writes
# proxies.csv, threshold.csv, bits.csv and, with gnuplot installed,
# simulate.svg to DIR (run/sim).
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/lib.sh

per_proxy=20000 sizes="4 8 16 32 64 128 256" out=run/sim
while [ $# -gt 0 ]; do
  case $1 in
    --per-proxy) per_proxy=${2:?}; shift ;;
    --proxies) sizes=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done
build=${SUMCACHE_BUILD:-build}
ensure_built "$build"
mkdir -p "$out"
sim=$build/sumcache-sim

trace() {  # trace REQUESTS PROXIES: a workload-gen trace on stdout
  "$build/workload-gen" --requests "$1" --objects $(($1 / 2)) \
    --proxies "$2" --clients $((4 * $2)) 2>/dev/null
}

rm -f "$out/proxies.csv"
for n in $sizes; do
  requests=$((per_proxy * n))
  echo "simulate: $n proxies, $requests requests" >&2
  "$sim" --proxies "$n" --csv <(trace "$requests" "$n") >"$out/rows.csv"
  if [ ! -f "$out/proxies.csv" ]; then cp "$out/rows.csv" "$out/proxies.csv"
  else tail -n +2 "$out/rows.csv" >>"$out/proxies.csv"; fi
done
rm -f "$out/rows.csv"
echo "simulate: 8 proxies, 1600000 requests: thresholds, bits per entry" >&2
"$sim" --proxies 8 --csv --thresholds 0.1,0.2,0.5,1,2,5,10 \
  <(trace 1600000 8) >"$out/threshold.csv"
"$sim" --proxies 8 --csv --modes summary --bits 8,16,32 --filter-for mean \
  <(trace 1600000 8) >"$out/bits.csv"

# the columns of a sumcache-sim CSV, by name, as awk variables
table() {  # table FILE AWK-PROGRAM
  awk -F, "NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
    function v(name) { return \$(c[name]) }
    $2" "$1"
}

echo
echo "Proxies (threshold 1 %, 16 bits per entry; cache 10 % of each proxy's infinite cache)"
printf '%7s %-8s %7s %7s %7s %12s %11s %9s %7s\n' proxies mode local remote \
  total msgs/request bytes/req falsehits ratio
table "$out/proxies.csv" '
  { m[v("mode")] = v("messages_per_request") }
  v("mode") == "summary" { r = m["summary"] > 0 ? m["icp"] / m["summary"] : 0 }
  { printf "%7d %-8s %6.2f%% %6.2f%% %6.2f%% %12.4f %11.1f %8.3f%% %7s\n",
      v("proxies"), v("mode"), v("local_hit_pct"), v("remote_hit_pct"),
      v("total_hit_pct"), v("messages_per_request"), v("bytes_per_request"),
      v("false_hit_pct"), (v("mode") == "summary" ? sprintf("%.1fx", r) : "") }'

  echo
  echo "Update threshold (8 proxies, 200,000 requests each, 16 bits per entry)"
  printf '%-10s %7s %7s %7s %9s %12s %11s\n' run local remote total \
    falsemiss msgs/request bytes/req
  table "$out/threshold.csv" '
    { run = v("mode") == "summary" ? v("threshold_pct") "%" : v("mode")
      printf "%-10s %6.2f%% %6.2f%% %6.2f%% %8.3f%% %12.4f %11.1f\n", run,
        v("local_hit_pct"), v("remote_hit_pct"), v("total_hit_pct"),
        v("false_miss_pct"), v("messages_per_request"), v("bytes_per_request") }'
  echo
  echo "Bits per entry (8 proxies, threshold 1 %, k = 4, filters sized for the mean object)"
  printf '%5s %9s %10s %10s %10s %10s %10s %10s\n' bits effective \
    false-pos formula 'per probe' falsehits 'of them' bytes/req
  printf '%5s %9s %10s %10s %10s %10s %10s %10s\n' '' '' '' '' '' \
    '/request' expired ''
  table "$out/bits.csv" '
    { printf "%5d %9.1f %9.4f%% %9.4f%% %9.4f%% %9.3f%% %9.3f%% %10.1f\n",
        v("bits_per_entry"), v("effective_bits_per_entry"),
        v("bloom_fp_pct"), v("bloom_fp_theory_pct"),
        v("probe_fp_pct"), v("false_hit_pct"), v("stale_false_hit_pct"),
        v("bytes_per_request") }'

if command -v gnuplot >/dev/null; then
  gnuplot <<EOT
set terminal svg size 1000,760 dynamic font "sans,11"
set output "$out/simulate.svg"
set datafile separator ","
set grid
set multiplot layout 2,2 title "sumcache-sim: $per_proxy requests per proxy"
set logscale x
set xlabel "proxies"
set xrange [3:350]
set title "protocol messages per request"
set logscale y
plot "< grep '^icp,' $out/proxies.csv" using 2:12 with linespoints \
       title "ICP" lc rgb "#cc6677", \
     "< grep '^summary,' $out/proxies.csv" using 2:12 with linespoints \
       title "summary 1 %" lc rgb "#4477aa"
set title "protocol bytes per request"
plot "< grep '^icp,' $out/proxies.csv" using 2:13 with linespoints \
       title "ICP" lc rgb "#cc6677", \
     "< grep '^summary,' $out/proxies.csv" using 2:13 with linespoints \
       title "summary 1 %" lc rgb "#4477aa"
set autoscale x
unset logscale y
set xlabel "update threshold (%), 8 proxies"
set title "total hit ratio (%)"
stats "< grep '^icp,' $out/threshold.csv" using 9 name "ICP" nooutput
set yrange [ICP_max - 2:ICP_max + 1]
plot "< grep '^summary,' $out/threshold.csv" using 3:9 \
       with linespoints title "summary" lc rgb "#4477aa", \
     ICP_max title "ICP" lc rgb "#cc6677"
unset logscale x
set logscale y
set autoscale y
set xlabel "bits per entry (k = 4), 8 proxies"
set title "summary false positives (%)"
set xtics (8, 16, 32)
plot "$out/bits.csv" every ::1 using 4:18 title "measured" \
       with linespoints lc rgb "#4477aa", \
     "" every ::1 using 4:19 title "(1 - e^{-kn/m})^k" \
       with lines dt 2 lc rgb "#228833"
unset multiplot
EOT
  echo
  echo "chart: $out/simulate.svg"
fi
echo "tables: $out/proxies.csv $out/threshold.csv $out/bits.csv"
