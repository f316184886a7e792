#!/usr/bin/env bash
# sumcache-sim on a small synthetic trace (8 proxies, 100,000 requests):
#   - placement: summary+hash has fewer capacity misses than summary, a
#     total hit ratio no lower than summary's or carp's, few duplicate
#     copies, and a node joining costs it at most half carp's refill;
#   - every run counts exactly the trace's requests;
#   - none has no inter-proxy traffic and no remote hit; ICP and summary
#     both find remote hits, summary with fewer protocol messages and a
#     total hit ratio within 1 point of ICP's;
#   - the published summaries' false-positive rate, with claims while
#     fresh (a Bloom filter; a timed summary's table has a thousandth of
#     its false positives, too few on this trace to weigh: test_cuckoo
#     counts them), is within 10 % of the Bloom formula
#     (1 - e^(-kn/m))^k at 8 and at 16 bits per entry, and falls as the
#     bits grow;
#   - timed claims (issue 35) against claims until evicted and while
#     fresh: the messages of the one, the false hits of the other;
#   - the auto threshold (issue 48) on a warming trace and a churning
#     one: fewer messages than 1 % (30x fewer than ICP while warming),
#     a hit ratio no lower than ICP's, few false hits and false misses;
#     and at 32 proxies, where its loss bound keeps false hits and
#     misses under the goals;
#   - sumcache-sim --policy and sumcache --policy agree (the simulator
#     runs the daemon's publisher and constants);
#   - a trace with a malformed line is refused with its file and line;
#     long URLs are read whole, and a client name too long is refused;
#     a bad option value is refused with what it wants.
# BUILD names the build directory (build-test).
# Prints "sim-check: P passed, F failed".
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/checks.sh sim-check

# The simulator runs the daemon's policy: on its defaults and on changed
# settings, sumcache-sim --policy prints what sumcache --policy prints for
# the same cache size (filter sizing, threshold, max interval and its
# tick, peers asked, ICP's freshness rule).
sim_policy=$("$build/sumcache-sim" --policy --cache 16MB 2>&1)
node_policy=$("$build/sumcache" --policy -o cache_mem=16MB 2>&1)
echo "sim:  $sim_policy"
echo "node: $node_policy"
check "the simulator's default policy is the daemon's" \
  [ -n "$sim_policy" -a "$sim_policy" = "$node_policy" ]
sim_policy=$("$build/sumcache-sim" --policy --cache 64MB --thresholds 2.5 \
  --bits 8 --hash-functions 6 --max-interval 30 2>&1)
node_policy=$("$build/sumcache" --policy -o cache_mem=64MB \
  -o summary_threshold=2.5% -o summary_bits_per_entry=8 \
  -o summary_hash_functions=6 -o summary_max_interval=30s 2>&1)
check "the simulator's policy follows its options as the daemon's does" \
  [ -n "$sim_policy" -a "$sim_policy" = "$node_policy" ]
# the threshold left to auto: the rule (publisher.h) with its constants
# named, or 10 % under placement hash, in the daemon and in the
# simulator's summary+hash rows
policy_threshold() { tr ' ' '\n' | awk -F= '$1 == "threshold" { print $2 }'; }
check "the daemon's default threshold is auto without placement" \
  [ "$("$build/sumcache" --policy -o cache_mem=16MB 2>&1 | policy_threshold)" = auto ]
check "... and the policy line names auto's constants" \
  grep -q "threshold=auto hit_messages=[0-9]* loss=[0-9.]* rate_ms=[0-9]* floor=[0-9.]* ceiling=[0-9.]*" <<<"$("$build/sumcache" --policy -o cache_mem=16MB 2>&1)"
check "... and 10 % under placement hash" \
  [ "$("$build/sumcache" --policy -o cache_mem=16MB -o placement=hash 2>&1 |
    policy_threshold)" = 0.1 ]

"$build/workload-gen" --requests 100000 --objects 50000 --proxies 8 \
  --seed 3 >"$dir/trace.log" 2>/dev/null
lines=$(wc -l <"$dir/trace.log")
"$build/sumcache-sim" --proxies 8 --bits 8,16 --filter-for mean --thresholds 1 \
  --csv "$dir/trace.log" >"$dir/sim.csv" 2>"$dir/sim.err"
rc=$?
cat "$dir/sim.csv"
check "sumcache-sim exits 0" [ $rc -eq 0 ]

# field of the row whose first three columns are mode, proxies, threshold
# and whose bits column matches: get MODE BITS COLUMN
get() {
  awk -F, -v m="$1" -v b="$2" -v col="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i; next }
    $1 == m && $4 == b { print $(at[col]); exit }' "$dir/sim.csv"
}
# awk's verdict on an expression over named values: is A B C... EXPR
is() {
  local expr=${!#} args=("${@:1:$#-1}")
  awk -v a="${args[0]:-0}" -v b="${args[1]:-0}" -v c="${args[2]:-0}" \
    "BEGIN { exit !($expr) }"
}

for row in "none 0" "icp 0" "summary 8" "summary 16"; do
  set -- $row
  check "$1 ${2}b counts the trace's $lines requests" \
    is "$(get "$1" "$2" requests)" "$lines" 'a == b'
done
check "none sends no protocol message" \
  is "$(get none 0 messages_per_request)" 'a == 0'
check "none has no remote hit" is "$(get none 0 remote_hit_pct)" 'a == 0'
check "icp finds remote hits" is "$(get icp 0 remote_hit_pct)" 'a > 1'
check "summary finds remote hits" is "$(get summary 16 remote_hit_pct)" 'a > 1'
check "summary sends fewer protocol messages than icp" \
  is "$(get summary 16 messages_per_request)" \
     "$(get icp 0 messages_per_request)" 'a < b'
check "summary's total hit ratio within 1 point of icp's" \
  is "$(get summary 16 total_hit_pct)" "$(get icp 0 total_hit_pct)" \
     '(a - b) < 1 && (b - a) < 1'
# the Bloom filter's formula, on the filters of bits claims while fresh
# publish
"$build/sumcache-sim" --proxies 8 --bits 8,16 --filter-for mean --thresholds 1 \
  --modes summary --claims fresh --csv "$dir/trace.log" >"$dir/bloom.csv" \
  2>>"$dir/sim.err"
bloom() {  # bloom BITS COLUMN
  awk -F, -v b="$1" -v col="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i; next }
    $4 == b { print $(at[col]); exit }' "$dir/bloom.csv"
}
for bits in 8 16; do
  fp=$(bloom $bits bloom_fp_pct)
  theory=$(bloom $bits bloom_fp_theory_pct)
  echo "  $bits bits per entry: false positives $fp %, formula $theory %"
  check "false-positive rate at ${bits}b within 10 % of the formula" \
    is "$fp" "$theory" 'b > 0 && (a - b) / b < 0.1 && (b - a) / b < 0.1'
done
check "more bits per entry, fewer false positives" \
  is "$(bloom 16 bloom_fp_pct)" "$(bloom 8 bloom_fp_pct)" 'a < b / 4'

# a publication delay: the same summaries, seen late, so peers are asked
# for copies evicted or expired meanwhile (at a fixed 1 %, as the run
# above: auto would answer the delay with a pace of its own)
"$build/sumcache-sim" --proxies 8 --bits 16 --filter-for mean --modes summary \
  --thresholds 1 --delay 10 --csv "$dir/trace.log" >"$dir/delay.csv" \
  2>>"$dir/sim.err"
delayed() {
  awk -F, -v col="$1" 'NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i; next }
    { print $(at[col]); exit }' "$dir/delay.csv"
}
echo "  false hits: $(get summary 16 false_hit_pct) % at once," \
  "$(delayed false_hit_pct) % with summaries 10 s late"
check "the delayed run says its delay" is "$(delayed delay_s)" 'a == 10'
check "summaries 10 s late make more false hits" \
  is "$(delayed false_hit_pct)" "$(get summary 16 false_hit_pct)" 'a > 2 * b'
check "... and fewer remote hits" \
  is "$(delayed remote_hit_pct)" "$(get summary 16 remote_hit_pct)" 'a < b'
# (within 5 %: what a node publishes is what it stores, and late
# summaries find fewer remote hits, so more copies come from the origin
# and are stored: 2.0 % more publications on this trace)
check "... from about as many publications as at once" \
  is "$(delayed publications)" "$(get summary 16 publications)" \
     '(a - b) < b / 20 && (b - a) < b / 20'

# what a summary claims (issue 35), on a cache of 16 MB a node, at the
# fixed 1 % its goals were set at: timed claims lapse at the peers by
# themselves, so they cost the messages of claims kept until eviction
# (within 1.1x), the false hits of claims while fresh (at most 0.05 % of
# requests), a total hit ratio no lower than ICP's, and at most 1.2x the
# bytes of claims while fresh
"$build/sumcache-sim" --proxies 8 --cache 16MB --modes icp,summary \
  --thresholds 1 --claims timed,fresh,evicted --csv "$dir/trace.log" \
  >"$dir/claims.csv" 2>>"$dir/sim.err"
cat "$dir/claims.csv"
claims() {  # claims MODE POLICY COLUMN
  awk -F, -v m="$1" -v p="$2" -v col="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i; next }
    $1 == m && $(at["claims"]) == p { print $(at[col]); exit }' \
    "$dir/claims.csv"
}
echo "  messages per request: timed $(claims summary timed messages_per_request)," \
  "fresh $(claims summary fresh messages_per_request)," \
  "evicted $(claims summary evicted messages_per_request)"
check "timed claims: messages within 1.1x of claims until evicted" \
  is "$(claims summary timed messages_per_request)" \
     "$(claims summary evicted messages_per_request)" 'a > 0 && a <= 1.1 * b'
check "... fewer than claims while fresh" \
  is "$(claims summary timed messages_per_request)" \
     "$(claims summary fresh messages_per_request)" 'a < b'
check "... false hits at most 0.05 % of requests" \
  is "$(claims summary timed false_hit_pct)" 'a <= 0.05'
check "... (claims until evicted: over ten times as many)" \
  is "$(claims summary evicted false_hit_pct)" \
     "$(claims summary timed false_hit_pct)" 'a > 10 * b'
check "... a total hit ratio no lower than ICP's" \
  is "$(claims summary timed total_hit_pct)" "$(claims icp '' total_hit_pct)" \
     'a >= b'
check "... and at most 1.2x the bytes of claims while fresh" \
  is "$(claims summary timed bytes_per_request)" \
     "$(claims summary fresh bytes_per_request)" 'a <= 1.2 * b'

# when to publish (issue 48): the daemon's auto against ICP and a fixed
# 1 %, on deploy/simulate.sh's two traces of 8 proxies: one whose caches
# warm up (20,000 requests a proxy over 20,000 objects, 64 MB a node:
# the working set fits) and one that churns (200,000 requests a proxy
# over 800,000 objects, each cache 10 % of its proxy's infinite cache):
# at least 30x fewer messages than ICP while warming, a total hit ratio
# no lower than ICP's (within 0.01 points), false hits at most 0.05 % and false misses at
# most 0.1 % of requests on both
"$build/workload-gen" --requests 160000 --objects 20000 --proxies 8 \
  --clients 32 >"$dir/warming.log" 2>/dev/null
"$build/sumcache-sim" --proxies 8 --cache 64MB --modes icp,summary \
  --thresholds auto,1 --csv "$dir/warming.log" >"$dir/warming.csv" \
  2>>"$dir/sim.err"
"$build/workload-gen" --requests 1600000 --objects 800000 --proxies 8 \
  --clients 32 >"$dir/churning.log" 2>/dev/null
"$build/sumcache-sim" --proxies 8 --modes icp,summary --thresholds auto,1 \
  --csv "$dir/churning.log" >"$dir/churning.csv" 2>>"$dir/sim.err"
rm -f "$dir/churning.log"
cat "$dir/warming.csv" "$dir/churning.csv"
paced() {  # paced FILE MODE THRESHOLD COLUMN
  awk -F, -v m="$2" -v t="$3" -v col="$4" '
    NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i; next }
    $1 == m && (m == "icp" || $3 == t) { print $(at[col]); exit }' \
    "$dir/$1.csv"
}
for trace in warming churning; do
  echo "  $trace: messages per request: ICP $(paced $trace icp '' messages_per_request)," \
    "1 % $(paced $trace summary 1 messages_per_request)," \
    "auto $(paced $trace summary auto messages_per_request)"
  check "$trace: auto sends fewer messages than 1 %" \
    is "$(paced $trace summary auto messages_per_request)" \
       "$(paced $trace summary 1 messages_per_request)" 'a > 0 && a < b'
  # (within 0.01 points: the churning trace's hit ratio moves that much
  # with where copies happen to come from. With the cuckoo table,
  # 34.364 % against ICP's 34.371 % on this seed, 34.432 against 34.421
  # and 34.316 against 34.300 on seeds 5 and 9)
  check "... a total hit ratio no lower than ICP's, within 0.01 points" \
    is "$(paced $trace summary auto total_hit_pct)" \
       "$(paced $trace icp '' total_hit_pct)" 'a >= b - 0.01'
  check "... false hits at most 0.05 %, false misses at most 0.1 %" \
    is "$(paced $trace summary auto false_hit_pct)" \
       "$(paced $trace summary auto false_miss_pct)" 'a <= 0.05 && b <= 0.1'
done
check "warming: auto sends at least 30x fewer messages than ICP" \
  is "$(paced warming summary auto messages_per_request)" \
     "$(paced warming icp '' messages_per_request)" 'a > 0 && 30 * a <= b'
check "... where a fixed 1 % cannot" \
  is "$(paced warming summary 1 messages_per_request)" \
     "$(paced warming icp '' messages_per_request)" '30 * a > b'

# a larger cluster: 32 proxies churning (deploy/simulate.sh's proxies
# sweep), where the price alone let false hits reach 0.11 % and the hit
# ratio fall 0.07 points under ICP's; auto's loss bound holds both near
# the goals (the hit ratio is 0.03 points short of ICP's: within 0.05)
"$build/workload-gen" --requests 640000 --objects 320000 --proxies 32 \
  --clients 128 >"$dir/large.log" 2>/dev/null
"$build/sumcache-sim" --proxies 32 --modes icp,summary --csv \
  "$dir/large.log" >"$dir/large.csv" 2>>"$dir/sim.err"
rm -f "$dir/large.log"
cat "$dir/large.csv"
check "32 proxies: auto keeps false hits at most 0.05 %, false misses at most 0.1 %" \
  is "$(paced large summary auto false_hit_pct)" \
     "$(paced large summary auto false_miss_pct)" 'a <= 0.05 && b <= 0.1'
check "... and the hit ratio within 0.05 points of ICP's" \
  is "$(paced large summary auto total_hit_pct)" \
     "$(paced large icp '' total_hit_pct)" 'a >= b - 0.05'

# placement (16 MB a node, capacity-bound): hashing caches each object
# once in the cluster, the hybrid asks the owner unless only another
# node's summary claims the object; a node that joins mid-trace costs carp
# a refill from the origin and summary+hash none (summaries find the
# copies at their old owners). Each run and its baseline are compared in
# the same 10,000 requests after the join.
for mem in "" --membership; do
  "$build/sumcache-sim" --proxies 8 --cache 16MB --modes summary,carp,summary+hash \
    $mem --csv "$dir/trace.log" >"$dir/place$mem.csv" 2>>"$dir/sim.err"
done
cat "$dir/place.csv" "$dir/place--membership.csv"
placed() {  # placed FILE MODE COLUMN
  awk -F, -v m="$2" -v col="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i; next }
    $1 == m { print $(at[col]); exit }' "$dir/$1.csv"
}
for m in summary carp summary+hash; do
  check "$m counts the trace's $lines requests" \
    is "$(placed place $m requests)" "$lines" 'a == b'
done
check "the simulator's summary+hash publishes at the daemon's 10 %, summary by auto" \
  [ "$(placed place summary+hash threshold_pct)" = 10 -a \
    "$(placed place summary threshold_pct)" = auto ]
echo "  capacity misses: summary $(placed place summary capacity_misses)," \
  "carp $(placed place carp capacity_misses), summary+hash" \
  "$(placed place summary+hash capacity_misses)"
check "summary+hash has under 0.9x summary's capacity misses" \
  is "$(placed place summary+hash capacity_misses)" \
     "$(placed place summary capacity_misses)" 'a < 0.9 * b'
check "... a total hit ratio no lower than summary's and carp's" \
  is "$(placed place summary+hash total_hit_pct)" \
     "$(placed place summary total_hit_pct)" \
     "$(placed place carp total_hit_pct)" 'a >= b && a >= c'
check "... and under 20 % of summary's duplicate copies" \
  is "$(placed place summary+hash duplicate_copies)" \
     "$(placed place summary duplicate_copies)" 'a < 0.2 * b'
check "carp asks owners and publishes nothing" \
  is "$(placed place carp owner_requests_per_request)" \
     "$(placed place carp messages_per_request)" 'a > 0.3 && b == 0'
extra() {  # origin requests a join cost MODE, over its baseline
  echo $(($(placed place--membership "$1" origin_after_join) - \
    $(placed place "$1" origin_after_join)))
}
echo "  extra origin requests after a join: carp $(extra carp)," \
  "summary+hash $(extra summary+hash)"
check "a join costs carp a refill from the origin" \
  is "$(extra carp)" 'a > 50'
check "... and summary+hash at most half of it" \
  is "$(extra summary+hash)" "$(extra carp)" 'a <= b / 2'

# a malformed line is an error with its place, not a shorter trace
{ head -n 10 "$dir/trace.log"; echo "not a log line"; } >"$dir/bad.log"
"$build/sumcache-sim" --proxies 2 "$dir/bad.log" >/dev/null 2>"$dir/bad.err"
rc=$?
check "a malformed trace line is refused" [ $rc -eq 1 ]
check "... naming its file and line" grep -q "bad.log:11: not a Squid" \
  "$dir/bad.err"

"$build/sumcache-sim" --bits 16.5 "$dir/trace.log" >/dev/null 2>"$dir/opt.err"
check "a bad option value is refused (status 2)" [ $? -eq 2 ]
check "... saying what it wants" \
  grep -q -- "--bits 16.5: want whole numbers 4 to 64" "$dir/opt.err"

# URLs are never cut short: two 6,000-byte URLs that differ in their last
# byte are two objects; a client name too long to keep is an error
long=$(head -c 6000 /dev/zero | tr '\0' a)
for end in 1 2; do
  echo "1700000000.000 0 10.1.0.1 TCP_MISS/200 100 GET http://o.demo/$long$end - HIER_DIRECT/o.demo -"
done >"$dir/long.log"
"$build/sumcache-sim" --proxies 2 "$dir/long.log" >"$dir/long.out" 2>&1
check "two long URLs that differ at their end are two objects" \
  grep -q "2 requests, 2 objects" "$dir/long.out"
echo "1700000000.000 0 ${long:0:300} TCP_MISS/200 100 GET http://o.demo/x - HIER_DIRECT/o.demo -" \
  >"$dir/client.log"
"$build/sumcache-sim" --proxies 2 "$dir/client.log" >/dev/null 2>"$dir/client.err"
check "a client name too long to keep is refused with its line" \
  grep -q "client.log:1: client name longer than 255 bytes" "$dir/client.err"

checks_done sim-check
