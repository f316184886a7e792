#!/usr/bin/env bash
# The documentation's shape:
#   - the top-level README fits on a screen or two (120 lines at most),
#     and links each folder's README, where the rest of it lives;
#   - every relative Markdown link in every README.md resolves to a file
#     of the tree, and a #section in it to a heading of that file;
#   - the link check bites: a README with a link to a missing file fails.
# Prints "docs-check: P passed, F failed".
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/checks.sh docs-check

lines=$(wc -l <README.md)
check "README.md fits on a screen or two ($lines lines, 120 at most)" \
  [ "$lines" -le 120 ]
for f in proxy peers summary deploy tests; do
  check "... and links $f/README.md" grep -q "($f/README.md)" README.md
done

# links FILE: every relative link of FILE that does not resolve, one a
# line (GitHub's anchors: lower case, punctuation gone, spaces as -)
links() {
  local file=$1 base
  base=$(dirname "$file")
  grep -o '](\([^)]*\))' "$file" | sed 's/^](//; s/)$//' |
  while read -r target; do
    case $target in http:*|https:*|mailto:*|'') continue ;; esac
    local path=${target%%#*} anchor=
    [ "$path" != "$target" ] && anchor=${target#*#}
    local to=$file
    [ -n "$path" ] && to=$base/$path
    if [ ! -e "$to" ]; then echo "$file: $target: no such file"; continue; fi
    if [ -n "$anchor" ] && ! grep '^#' "$to" | sed 's/^#* //' |
        tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g' |
        grep -qx -- "$anchor"; then
      echo "$file: $target: no such section"
    fi
  done
}
mapfile -t readmes < <(git ls-files '*README.md' 2>/dev/null || find . -name README.md -not -path './build*')
check "there are READMEs to check (${#readmes[@]})" [ "${#readmes[@]}" -ge 6 ]
bad=()
for f in "${readmes[@]}"; do
  while read -r line; do [ -n "$line" ] && bad+=("$line"); done < <(links "$f")
done
check "every relative link in them resolves" \
  bash -c "printf '%s\n' \"\$@\"; [ \$# -eq 0 ]" _ "${bad[@]}"
printf 'see [gone](no/such/file.md)\n' >"$dir/README.md"
check "... and a link to a missing file is caught" \
  bash -c "$(declare -f links); [ -n \"\$(links '$dir/README.md')\" ]"

checks_done docs-check
