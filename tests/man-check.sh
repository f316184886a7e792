#!/usr/bin/env bash
# The manual pages the build writes (build/man: sumcache.8 and
# sumcache.conf.5, by sumcache --man from its own tables):
#   - they are what the binary writes now (not left from an older build);
#   - mandoc -T lint finds nothing to say about either;
#   - sumcache.conf.5 has every directive --help lists, with its syntax,
#     default and reload behaviour; sumcache.8 has every option --help
#     lists, and the signals, files and exit codes;
#   - both render as text; sumcache-sim.1, workload-gen.1 and replay.1
#     (deploy/man, by hand) are lint-clean and have every option their
#     tool's usage lists.
# BUILD names the build directory (build-test).
# Prints "man-check: P passed, F failed".
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/checks.sh man-check

bin=$build/sumcache
# missing_in TEXT OPTION...: the options no line of the rendered page
# TEXT starts with, one a line
missing_in() {
  local text=$1 o; shift
  for o; do grep -q -- "^ *$o\b" "$text" || echo "$o"; done
}
for page in sumcache.8 sumcache.conf.5; do
  check "$page is built" [ -s "$build/man/$page" ]
  check "... and is what sumcache --man writes now" \
    cmp -s "$build/man/$page" <("$bin" --man "$page")
  check "... mandoc -T lint finds nothing" \
    bash -c "out=\$(mandoc -T lint -W warning '$build/man/$page' 2>&1); echo \"\$out\"; [ -z \"\$out\" ]"
  check "... renders as text" \
    bash -c "mandoc -T ascii '$build/man/$page' | sed 's/.\x08//g' | grep -q '^SEE ALSO'"
done

# the directives as --help lists them: "  name  help" then "  syntax;
# default: ..." (conf_print_help, from the same table)
"$bin" --help >"$dir/help.txt"
mapfile -t names < <(awk '/^Directives/ { on = 1; next }
  on && /^  [a-z_]+ / { print $1 }' "$dir/help.txt")
check "--help lists directives" [ "${#names[@]}" -gt 50 ]
conf=$build/man/sumcache.conf.5
missing=()
for n in "${names[@]}"; do
  grep -qx "\.B $n" "$conf" || missing+=("$n")
done
check "sumcache.conf.5 has each of the ${#names[@]} directives" \
  bash -c "echo 'missing: ${missing[*]}'; [ ${#missing[@]} -eq 0 ]"
check "... each with its default and reload behaviour" \
  [ "$(grep -c 'On reload: ' "$conf")" -eq "${#names[@]}" ]
check "... the default of cache_mem as --help says it" \
  bash -c "grep -A6 -x '.B cache_mem' '$conf' | grep -q 'Default: .fB256MB'"

mandoc -T ascii "$build/man/sumcache.8" | sed 's/.\x08//g' >"$dir/sumcache.txt"
mapfile -t opts < <(awk '/^usage:/ { on = 1; next } /^$/ { on = 0 }
  on && /^  -/ { print $1 }' "$dir/help.txt" | tr -d ,)
check "--help lists options" [ "${#opts[@]}" -gt 5 ]
mapfile -t missing < <(missing_in "$dir/sumcache.txt" "${opts[@]}")
check "sumcache.8 has each of the ${#opts[@]} options" \
  bash -c "echo 'missing: ${missing[*]}'; [ ${#missing[@]} -eq 0 ]"
for section in SIGNALS FILES "EXIT STATUS" "SEE ALSO"; do
  check "... and a $section section" grep -q "^$section" "$dir/sumcache.txt"
done
# sumcache-sim(1), workload-gen(1) and replay(1) are written by hand
# (deploy/man): each is lint-clean and has every option its tool's usage
# lists (the usage an unknown option prints)
hand_page() {  # hand_page TOOL: the tool's options, one a line
  "$build/$1" --no-such-option 2>&1 | awk '
    /^usage:/ { for (i = 2; i <= NF; i++) if ($i ~ /^\[?-[a-z]$/ ||
      $i ~ /^-[a-z]$/) { o = $i; gsub(/\[/, "", o); print o } }
    /^  --/ { print $1 }'
}
for tool in sumcache-sim workload-gen replay; do
  page=deploy/man/$tool.1
  check "$page: mandoc -T lint finds nothing" \
    bash -c "out=\$(mandoc -T lint -W warning '$page' 2>&1); echo \"\$out\"; [ -z \"\$out\" ]"
  mapfile -t tool_opts < <(hand_page "$tool")
  check "... $tool's usage lists options" [ "${#tool_opts[@]}" -ge 5 ]
  mandoc -T ascii "$page" | sed 's/.\x08//g' >"$dir/$tool.txt"
  mapfile -t missing < <(missing_in "$dir/$tool.txt" "${tool_opts[@]}")
  check "... and the page has each of its ${#tool_opts[@]} options" \
    bash -c "echo 'missing: ${missing[*]}'; [ ${#missing[@]} -eq 0 ]"
done

check "an unknown page is refused (status 2)" \
  bash -c "'$bin' --man nope.1 >/dev/null 2>&1; [ \$? -eq 2 ]"

checks_done man-check
