# What the *-check.sh scripts share; sourced from the repository's root:
#   . tests/checks.sh NAME  sets build (BUILD, or build-test) and a fresh
#                           scratch directory dir=$build/NAME
#   check NAME COMMAND...   runs COMMAND, counts it; its output is shown
#                           only when it fails
#   checks_done PREFIX      prints "PREFIX: P passed, F failed" (the line
#                           tests/run.sh adds up); fails if any failed
#   metric_at PORT SERIES   the value of SERIES in the /metrics of the node
#                           on 127.0.0.1:PORT (0 if absent)
build=${BUILD:-build-test}
dir=$build/${1:?which check}
rm -rf "$dir"
mkdir -p "$dir"
checks_pass=0 checks_fail=0
check() {
  local name=$1; shift
  if "$@" >"$dir/check.out" 2>&1; then
    checks_pass=$((checks_pass + 1)); echo "  ok   $name"
  else
    checks_fail=$((checks_fail + 1)); echo "  FAIL $name"
    sed 's/^/       /' "$dir/check.out"
  fi
}
checks_done() {
  echo "$1: $checks_pass passed, $checks_fail failed"
  [ "$checks_fail" -eq 0 ]
}
metric_at() {
  curl -s "http://127.0.0.1:$1/metrics" |
    awk -v s="$2" '$1 == s { v = $2 } END { print v + 0 }'
}
