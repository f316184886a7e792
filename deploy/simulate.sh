#!/usr/bin/env bash
# Sizing a cluster larger than this machine: sumcache-sim on synthetic
# traces (workload-gen, piped: no trace file), of two kinds:
#   churning  R x N requests (R = 20000) from 4N clients over R x N / 2
#             objects, each proxy's cache 10 % of its infinite cache (the
#             bytes of the distinct objects its clients ask for): the
#             working set is many times the caches, which evict all along
#   warming   R x N requests over R x N / 8 objects, 64 MB a proxy: the
#             working set fits, the caches fill from empty, and nearly
#             every change is an insert
# Four sweeps:
#   deploy/simulate.sh [--per-proxy R] [--proxies "4 8 ... 256"] [--out DIR]
#   1. proxies: for each N both traces; none (churning), icp and summary
#      (the daemon's defaults: threshold auto, 16 bits per entry): hit
#      ratios, protocol messages and bytes per request
#   2. threshold: 8 proxies, 200,000 requests each, churning (caches of
#      ~12,000 objects, so 0.1 % is still 12 changes): auto and 0.1 % to
#      10 %, against ICP
#   3. threshold, warming: 8 proxies, 20,000 requests each over 20,000
#      objects, 64 MB a proxy: auto and 1 % to 10 %, against ICP
#   4. bits per entry, on the churning trace of 2: 8, 16, 32 at 1 %,
#      claims while fresh (a Bloom filter's bits; a timed summary's
#      table has 18 bits of fingerprint a key whatever the option),
#      filters sized for each proxy's mean object (sumcache sizes for
#      2 KB objects, which gives these 9 KB objects several times the
#      bits), the summaries' false positives against the Bloom formula
# Prints the tables; writes proxies.csv, threshold.csv, warming.csv,
# bits.csv and, with gnuplot installed, simulate.svg to DIR (run/sim).
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/lib.sh

per_proxy=20000 sizes="4 8 16 32 64 128 256" out=run/sim
while [ $# -gt 0 ]; do
  case $1 in
    --per-proxy) per_proxy=${2:?}; shift ;;
    --proxies) sizes=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    *) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done
build=${SUMCACHE_BUILD:-build}
ensure_built "$build"
mkdir -p "$out"
sim=$build/sumcache-sim

trace() {  # trace REQUESTS PROXIES [OBJECTS]: a workload-gen trace on stdout
  "$build/workload-gen" --requests "$1" --objects "${3:-$(($1 / 2))}" \
    --proxies "$2" --clients $((4 * $2)) 2>/dev/null
}
warming() {  # warming REQUESTS PROXIES
  trace "$1" "$2" $(($1 / 8))
}

# rows KIND FILE SIM-ARGS...: the simulator's CSV rows with the trace's
# kind in front, appended to FILE (made with the header if missing)
rows() {
  local kind=$1 file=$2
  shift 2
  "$sim" --csv "$@" >"$out/rows.csv"
  [ -f "$file" ] || sed -n '1s/^/trace,/p' "$out/rows.csv" >"$file"
  tail -n +2 "$out/rows.csv" | sed "s/^/$kind,/" >>"$file"
  rm -f "$out/rows.csv"
}

rm -f "$out/proxies.csv" "$out/threshold.csv" "$out/warming.csv" "$out/bits.csv"
for n in $sizes; do
  requests=$((per_proxy * n))
  echo "simulate: $n proxies, $requests requests, churning and warming" >&2
  rows churning "$out/proxies.csv" --proxies "$n" <(trace "$requests" "$n")
  rows warming "$out/proxies.csv" --proxies "$n" --modes icp,summary \
    --cache 64MB <(warming "$requests" "$n")
done
echo "simulate: 8 proxies: thresholds (churning, warming), bits per entry" >&2
rows churning "$out/threshold.csv" --proxies 8 \
  --thresholds auto,0.1,0.2,0.5,1,2,5,10 <(trace 1600000 8)
rows warming "$out/warming.csv" --proxies 8 --modes icp,summary \
  --cache 64MB --thresholds auto,1,2,5,10 <(trace 160000 8 20000)
rows churning "$out/bits.csv" --proxies 8 --modes summary --bits 8,16,32 \
  --claims fresh --thresholds 1 --filter-for mean <(trace 1600000 8)

# the columns of a sumcache-sim CSV, by name, as awk variables
table() {  # table FILE AWK-PROGRAM
  awk -F, "NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
    function v(name) { return \$(c[name]) }
    $2" "$1"
}

echo
echo "Proxies (the daemon's defaults: threshold auto, 16 bits per entry);"
echo "churning: cache 10 % of each proxy's infinite cache; warming: 64 MB a proxy"
echo "peers held: the bytes a node holds of its peers' summaries (mean over"
echo "the publications), and per key they claim"
printf '%7s %-9s %-8s %7s %7s %7s %12s %11s %9s %9s %7s %11s %9s\n' proxies \
  trace mode local remote total msgs/request bytes/req falsehits falsemiss \
  ratio 'peers held' B/key
table "$out/proxies.csv" '
  { key = v("trace") v("proxies"); m[key, v("mode")] = v("messages_per_request") }
  v("mode") == "summary" { r = m[key, "summary"] > 0 ? m[key, "icp"] / m[key, "summary"] : 0 }
  { sum = v("mode") == "summary"
    printf "%7d %-9s %-8s %6.2f%% %6.2f%% %6.2f%% %12.4f %11.1f %8.3f%% %8.3f%% %7s %8.1f MB %9s\n",
      v("proxies"), v("trace"), v("mode"), v("local_hit_pct"), v("remote_hit_pct"),
      v("total_hit_pct"), v("messages_per_request"), v("bytes_per_request"),
      v("false_hit_pct"), v("false_miss_pct"),
      (sum ? sprintf("%.1fx", r) : ""), v("peer_memory_per_node_bytes") / 1e6,
      (sum ? sprintf("%.2f", v("peer_bytes_per_key")) : "") }'

thresholds() {  # thresholds FILE
  printf '%-10s %7s %7s %7s %9s %9s %12s %11s %7s\n' run local remote total \
    falsehits falsemiss msgs/request bytes/req ratio
  table "$1" '
    { run = v("mode") == "summary" ? v("threshold_pct") : v("mode")
      if (run ~ /^[0-9.]+$/) run = run "%"
      if (v("mode") == "icp") icp = v("messages_per_request")
      r = v("mode") == "summary" && icp > 0 ? sprintf("%.1fx", icp / v("messages_per_request")) : ""
      printf "%-10s %6.2f%% %6.2f%% %6.2f%% %8.3f%% %8.3f%% %12.4f %11.1f %7s\n", run,
        v("local_hit_pct"), v("remote_hit_pct"), v("total_hit_pct"),
        v("false_hit_pct"), v("false_miss_pct"), v("messages_per_request"),
        v("bytes_per_request"), r }'
}
echo
echo "Update threshold, churning (8 proxies, 200,000 requests each, 16 bits per entry)"
thresholds "$out/threshold.csv"
echo
echo "Update threshold, warming (8 proxies, 20,000 requests each over 20,000 objects, 64 MB a proxy)"
thresholds "$out/warming.csv"
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
plot "< grep '^churning,icp,' $out/proxies.csv" using 3:13 with linespoints \
       title "ICP" lc rgb "#cc6677", \
     "< grep '^churning,summary,' $out/proxies.csv" using 3:13 with linespoints \
       title "summary, auto" lc rgb "#4477aa", \
     "< grep '^warming,summary,' $out/proxies.csv" using 3:13 with linespoints \
       title "summary, auto, warming" lc rgb "#228833"
set title "protocol bytes per request"
plot "< grep '^churning,icp,' $out/proxies.csv" using 3:14 with linespoints \
       title "ICP" lc rgb "#cc6677", \
     "< grep '^churning,summary,' $out/proxies.csv" using 3:14 with linespoints \
       title "summary, auto" lc rgb "#4477aa", \
     "< grep '^warming,summary,' $out/proxies.csv" using 3:14 with linespoints \
       title "summary, auto, warming" lc rgb "#228833"
set autoscale x
unset logscale y
set xlabel "update threshold (%), 8 proxies"
set title "total hit ratio (%)"
stats "< grep '^churning,icp,' $out/threshold.csv" using 10 name "ICP" nooutput
set yrange [ICP_max - 2:ICP_max + 1]
plot "< grep '^churning,summary,' $out/threshold.csv" using 4:10 \
       with linespoints title "summary" lc rgb "#4477aa", \
     ICP_max title "ICP" lc rgb "#cc6677"
unset logscale x
set logscale y
set autoscale y
set xlabel "bits per entry (k = 4), 8 proxies"
set title "summary false positives (%)"
set xtics (8, 16, 32)
plot "$out/bits.csv" every ::1 using 5:19 title "measured" \
       with linespoints lc rgb "#4477aa", \
     "" every ::1 using 5:20 title "(1 - e^{-kn/m})^k" \
       with lines dt 2 lc rgb "#228833"
unset multiplot
EOT
  echo
  echo "chart: $out/simulate.svg"
fi
echo "tables: $out/proxies.csv $out/threshold.csv $out/warming.csv $out/bits.csv"
