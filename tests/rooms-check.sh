#!/usr/bin/env bash
# rooms-check: every #include between the rooms of proxy/ points down.
#
# The rooms, lowest first (proxy/README.md):
#   http conf cert cache stats types conn serve top
# where cache/disk is part of cache, "types" is proxy/proxy.h (the types
# the connection and request rooms share), and "top" is the rest of
# proxy/'s own level (main, server, reload). A file may include headers
# of its own room and of rooms below it; an include of a room above is a
# climbing edge, and the check fails naming each one. Headers outside
# proxy/ (peers/, summary/, libraries) are below every room. So that the
# check is known to bite, it then plants one climbing include (http/url.c
# including server.h) in a copy of proxy/ and must fail on it. The base
# rooms under peers/ and summary/ are checked the same way: they include
# only base headers.
#
#   tests/rooms-check.sh            (from the repository's root)
set -euo pipefail
cd "$(dirname "$0")/.."

order="http conf cert cache stats types conn serve top"

room_of() { # path under proxy/ -> room
  case "$1" in
    proxy/proxy.h) echo types ;;
    proxy/*/*) local r=${1#proxy/}; echo "${r%%/*}" ;;
    *) echo top ;;
  esac
}

rank_of() {
  local i=0
  for r in $order; do
    [ "$r" = "$1" ] && { echo $i; return; }
    i=$((i + 1))
  done
  echo "rooms-check: $1 is no room of proxy/ (add it to the order)" >&2
  exit 2
}

# check DIR: the rule over DIR/proxy; prints each climbing edge and a
# count line, returns 1 on a climb
check() (
  cd "$1"
  declare -A header_room
  while IFS= read -r h; do
    header_room[$(basename "$h")]=$(room_of "$h")
  done < <(find proxy -name '*.h' | sort)

  bad=0 edges=0
  while IFS= read -r f; do
    from=$(room_of "$f")
    from_rank=$(rank_of "$from")
    while IFS=: read -r line inc; do
      name=$(basename "$inc")
      to=${header_room[$name]:-}
      [ -n "$to" ] && [ "$to" != "$from" ] || continue
      edges=$((edges + 1))
      if [ "$(rank_of "$to")" -ge "$from_rank" ]; then
        echo "  climbs: $f:$line ($from) includes $name ($to)"
        bad=$((bad + 1))
      fi
    done < <(grep -n '^#include "' "$f" |
      sed 's/^\([0-9]*\):#include "\([^"]*\)".*/\1:\2/')
  done < <(find proxy -name '*.[ch]' | sort)
  echo "$edges includes between rooms, $bad climbing"
  [ "$bad" -eq 0 ]
)

# base_check DIR: the base rooms (peers/base, summary/base) are below
# every other folder: summary/base includes none of our headers but its
# own, peers/base only its own and summary/base's
base_check() (
  cd "$1"
  bad=0
  while IFS= read -r f; do
    allowed=summary/base
    case "$f" in peers/*) allowed="peers/base summary/base" ;; esac
    while IFS=: read -r line inc; do
      found=false
      for d in $allowed; do [ -e "$d/$inc" ] && found=true; done
      if ! $found; then
        echo "  climbs: $f:$line includes $inc (base may use $allowed)"
        bad=$((bad + 1))
      fi
    done < <(grep -n '^#include "' "$f" |
      sed 's/^\([0-9]*\):#include "\([^"]*\)".*/\1:\2/')
  done < <(find peers/base summary/base -name '*.[ch]' | sort)
  echo "base rooms include only base headers: $bad climbing"
  [ "$bad" -eq 0 ]
)

passed=0 failed=0
for rule in check base_check; do
  if out=$($rule .); then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
  echo "$out"
done

# each rule must catch a climb planted in a copy of the tree
planted=$(mktemp -d)
trap 'rm -rf "$planted"' EXIT
cp -r proxy peers summary "$planted/"
sed -i '0,/^#include "/s//#include "server.h"\n#include "/' \
  "$planted/proxy/http/url.c"
sed -i '0,/^#include "/s//#include "peers.h"\n#include "/' \
  "$planted/peers/base/metric.c"
if check "$planted" >/dev/null; then
  echo "  the planted climb (http/url.c includes server.h) was not caught"
  failed=$((failed + 1))
else
  passed=$((passed + 1))
fi
if base_check "$planted" >/dev/null; then
  echo "  the planted climb (base/metric.c includes peers.h) was not caught"
  failed=$((failed + 1))
else
  passed=$((passed + 1))
fi

echo "rooms-check: $passed passed, $failed failed (order: $order)"
[ "$failed" -eq 0 ]
