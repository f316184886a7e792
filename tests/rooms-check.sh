#!/usr/bin/env bash
# rooms-check: no room of proxy/ reaches up, by include or by call.
#
# The rooms, lowest first (proxy/README.md):
#   http conf cert cache cache/disk cache/tiers stats types conn serve top
# where "types" is proxy/proxy.h (the types the connection and request
# rooms share) and "top" is the rest of proxy/'s own level (main, server,
# reload). A room is a directory: cache/disk is a room of its own, above
# cache/ (the store and its bodies) and below cache/tiers (memory over
# the disk). A folder of proxy/ that is no room here fails the check.
#
# Two graphs are read from the real build (BUILD, default build-test,
# configured and built; its compile_commands.json gives the flags):
#   includes  each file is preprocessed with the build's flags and -H, so
#             every spelling counts ("# include", <name.h> through the
#             rooms' include directories, a macro); a direct include of a
#             header in a room above is a climb
#   calls     each object file's undefined symbols (nm -u), resolved to
#             the room whose object defines them (nm --defined-only); a
#             call into a room above is a climb, prototype or not
# Headers and objects outside proxy/ (peers/, summary/, libraries) are
# below every room. The base rooms, peers/base and summary/base, include
# only base headers. And serve/ answers through the response writer only
# (conn/writer.h): none of its objects uses the connection's output or
# the HTTP/1.1 writer's parts, none of its sources spells a status line.
#
# So that each rule is known to bite, the check then plants each hole it
# closes in a copy of the tree and must fail on every one of them.
#
#   tests/rooms-check.sh [BUILD]       (from the repository's root)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=$(cd "${1:-${BUILD:-build-test}}" && pwd)

order="http conf cert cache cache/disk cache/tiers stats types conn serve top"

cc_json=$build/compile_commands.json
[ -f "$cc_json" ] || {
	echo "rooms-check: no $cc_json (configure and build $build first)" >&2
	exit 2
}

# flags_of FILE: the build's flags for FILE (repository-relative): -D,
# -I, -std and the like, without the output and the input
flags_of() {
	grep -F -A1 "\"command\"" "$cc_json" | grep -F -B1 "\"file\": \"$root/$1\"" |
		sed -n 's/^ *"command": "\(.*\)",$/\1/p' | head -1 |
		sed 's/\\\\/\x01/g; s/\\"/"/g; s/\x01/\\/g' |
		sed 's/ -o [^ ]*//; s/ -c [^ ]*//; s/^[^ ]* //'
}
cc_bin=$(sed -n 's/^ *"command": "\([^ ]*\) .*/\1/p' "$cc_json" | head -1)
proxy_flags=$(flags_of proxy/server.c)
base_flags=$(flags_of peers/base/metric.c)
[ -n "$proxy_flags" ] && [ -n "$base_flags" ] || {
	echo "rooms-check: $cc_json lacks proxy/server.c or peers/base/metric.c" >&2
	exit 2
}

# room_of PATH (relative to the tree): its room, or "" outside proxy/
room_of() {
	case "$1" in
	proxy/proxy.h) echo types ;;
	proxy/*/*) local r=${1#proxy/}; echo "${r%/*}" ;;
	proxy/*) echo top ;;
	*) echo "" ;;
	esac
}

declare -A rank
i=0
for r in $order; do rank[$r]=$i; i=$((i + 1)); done

# includes TREE FLAGS FILE: the headers FILE includes itself (depth 1 of
# the preprocessor's -H tree), relative to TREE, one a line; a header
# outside TREE is left out. Fails with the compiler's words when FILE
# does not preprocess.
includes() {
	local tree=$1 flags=$2 file=$3 out
	# shellcheck disable=SC2086 # the flags are words
	if ! out=$(cd "$tree" && eval "$cc_bin" ${flags//$root/$tree} -x c -E -H \
		-o /dev/null "$tree/$file" 2>&1); then
		echo "rooms-check: $file does not preprocess:" >&2
		echo "$out" | grep -v '^\.' >&2
		return 1
	fi
	echo "$out" | sed -n 's/^\. //p' | while IFS= read -r h; do
		h=$(realpath -m "$h")
		case "$h" in "$tree"/*) echo "${h#"$tree"/}" ;; esac
	done
}

# rooms_known TREE: every folder of proxy/ holding code is a room
rooms_known() {
	local bad=0 d
	while IFS= read -r d; do
		local r=${d#proxy/}
		if [ -z "${rank[$r]+x}" ]; then
			echo "  unknown room: $d (add it to the order in tests/rooms-check.sh)"
			bad=1
		fi
	done < <(cd "$1" && find proxy -mindepth 2 -name '*.[ch]' -printf '%h\n' | sort -u)
	return $bad
}

# include_check TREE [FILE...]: the include rule over the named files of
# proxy/ (all of them when none are named)
include_check() {
	local tree=$1; shift
	local files bad=0 edges=0 f h from to incs
	if [ $# -gt 0 ]; then files=("$@"); else
		mapfile -t files < <(cd "$tree" && find proxy -name '*.[ch]' | sort)
	fi
	for f in "${files[@]}"; do
		from=$(room_of "$f")
		if ! incs=$(includes "$tree" "$proxy_flags" "$f"); then
			bad=$((bad + 1))
			continue
		fi
		while IFS= read -r h; do
			to=$(room_of "$h")
			[ -n "$to" ] && [ "$to" != "$from" ] || continue
			edges=$((edges + 1))
			if [ -z "${rank[$to]+x}" ] || [ "${rank[$to]}" -ge "${rank[$from]}" ]; then
				echo "  climbs: $f ($from) includes $h ($to)"
				bad=$((bad + 1))
			fi
		done <<<"$incs"
	done
	echo "includes: $edges between rooms, $bad climbing"
	[ "$bad" -eq 0 ]
}

# objects: the object the build makes of each source of proxy/ (the
# daemon's library and main), as "SOURCE OBJECT"
objects() {
	grep -F '"command"' "$cc_json" |
		sed -n "s#.* -o \(CMakeFiles/sumcache\(_proxy\)\?\.dir/[^ ]*\) -c $root/\(proxy/[^ \"]*\)\".*#\3 $build/\1#p" |
		sort
}

# call_check [SOURCE OBJECT]: the call rule over the build's objects,
# SOURCE's object replaced by OBJECT when given
call_check() {
	local swap_src=${1:-} swap_obj=${2:-}
	local src o sym from to bad=0 calls=0
	local -A defined_in
	local pairs
	pairs=$(objects | while read -r src o; do
		[ "$src" = "$swap_src" ] && o=$swap_obj
		echo "$src $o"
	done)
	while read -r src o; do
		while read -r sym; do defined_in[$sym]=$src; done < <(
			nm --defined-only -g "$o" | awk 'NF == 3 { print $3 }')
	done <<<"$pairs"
	while read -r src o; do
		from=$(room_of "$src")
		while read -r sym; do
			[ -n "${defined_in[$sym]+x}" ] || continue
			to=$(room_of "${defined_in[$sym]}")
			[ "$to" != "$from" ] || continue
			calls=$((calls + 1))
			if [ "${rank[$to]}" -ge "${rank[$from]}" ]; then
				echo "  climbs: $src ($from) uses $sym of ${defined_in[$sym]} ($to)"
				bad=$((bad + 1))
			fi
		done < <(nm -u "$o" | awk '{ print $2 }' | sort -u)
	done <<<"$pairs"
	echo "calls: $calls symbols used between rooms, $bad climbing"
	[ "$bad" -eq 0 ]
}

# writer_check [SOURCE OBJECT [TREE]]: serve/ answers through the writer
# only (conn/writer.h): no object of serve/ uses the connection's output
# (client_out, its marks and counts) or the HTTP/1.1 writer's parts, and
# no source of serve/ spells an HTTP/1.x status line
writer_check() {
	local swap_src=${1:-} swap_obj=${2:-} tree=${3:-$root} bad=0 src o sym hit
	while read -r src o; do
		case "$src" in proxy/serve/*) ;; *) continue ;; esac
		[ "$src" = "$swap_src" ] && o=$swap_obj
		while read -r sym; do
			echo "  writes past the writer: $src uses $sym"
			bad=$((bad + 1))
		done < <(nm -u "$o" | awk '{ print $2 }' |
			grep -E '^(client_out|client_out_mark|client_sent|h1_status|h1_tail)$' || true)
	done < <(objects)
	while IFS= read -r hit; do
		echo "  HTTP/1.1 text in serve/: $hit"
		bad=$((bad + 1))
	done < <(cd "$tree" && grep -n '"HTTP/1\.' proxy/serve/*.c || true)
	echo "serve/ through the writer only: $bad outside it"
	[ "$bad" -eq 0 ]
}

# base_check TREE [FILE...]: peers/base includes only its own headers and
# summary/base's; summary/base only its own
base_check() {
	local tree=$1; shift
	local files bad=0 f h allowed ok d
	if [ $# -gt 0 ]; then files=("$@"); else
		mapfile -t files < <(cd "$tree" && find peers/base summary/base -name '*.[ch]' | sort)
	fi
	for f in "${files[@]}"; do
		allowed=summary/base
		case "$f" in peers/*) allowed="peers/base summary/base" ;; esac
		while IFS= read -r h; do
			ok=false
			for d in $allowed; do [ "${h%/*}" = "$d" ] && ok=true; done
			$ok || { echo "  climbs: $f includes $h (base may use $allowed)"; bad=$((bad + 1)); }
		done < <(includes "$tree" "$base_flags" "$f")
	done
	echo "base rooms include only base headers: $bad climbing"
	[ "$bad" -eq 0 ]
}

passed=0 failed=0
verdict() { # NAME STATUS
	if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else
		failed=$((failed + 1)); echo "  FAILED: $1"; fi
}

st=0; rooms_known "$root" || st=$?; verdict "every folder is a room" $st
st=0; include_check "$root" || st=$?; verdict "includes point down" $st
st=0; call_check || st=$?; verdict "calls point down" $st
st=0; base_check "$root" || st=$?; verdict "base rooms stand alone" $st
st=0; writer_check || st=$?; verdict "serve/ through the writer only" $st

# Each hole, planted in a copy of the tree: the check must fail on it.
planted=$(mktemp -d)
trap 'rm -rf "$planted" "$planted.out"' EXIT
plant() { # a fresh copy of the tree
	rm -rf "${planted:?}"/*
	cp -r proxy peers summary "$planted/"
}
must_fail() { # NAME COMMAND...: the check must fail on the plant
	if "${@:2}" >"$planted.out" 2>&1; then
		echo "  the planted hole was not caught: $1"
		failed=$((failed + 1))
	else
		passed=$((passed + 1))
		echo "  caught: $1: $(grep -m1 'climbs\|unknown\|preprocess\|writes past\|HTTP/1.1 text' "$planted.out")"
	fi
}
add_line() { # FILE LINE: LINE above FILE's first #include
	sed -i "0,/^#include /s//$2\n#include /" "$planted/$1"
}

plant; add_line proxy/http/url.c '#include "server.h"'
must_fail 'http/url.c includes server.h' include_check "$planted" proxy/http/url.c
plant; add_line proxy/http/url.c '# include "server.h"'
must_fail 'http/url.c: # include "server.h"' include_check "$planted" proxy/http/url.c
plant; add_line proxy/http/url.c '#include <request.h>'
must_fail 'http/url.c: #include <request.h>' include_check "$planted" proxy/http/url.c
plant; add_line proxy/cache/store.c '#include "disk.h"'
must_fail 'cache/store.c includes disk.h' include_check "$planted" proxy/cache/store.c
plant; add_line proxy/cache/disk/disk.c '#include "tiers.h"'
must_fail 'cache/disk/disk.c includes tiers.h' include_check "$planted" proxy/cache/disk/disk.c
plant; mkdir "$planted/proxy/annex"; echo 'int annex;' >"$planted/proxy/annex/annex.c"
must_fail 'a folder proxy/annex/ in no order' rooms_known "$planted"
plant; add_line peers/base/metric.c '#include "peers.h"'
must_fail 'peers/base/metric.c includes peers.h' base_check "$planted" peers/base/metric.c

# must_fail_built NAME SOURCE CHECK LINES: LINES appended to SOURCE in a
# fresh plant, compiled with the build's flags; CHECK (call_check or
# writer_check) must fail with that object in place of the build's
must_fail_built() {
	local name=$1 src=$2 check=$3 obj
	plant
	printf '%s\n' "$4" >>"$planted/$src"
	obj=$planted/planted.o
	# shellcheck disable=SC2086
	if (cd "$planted" && eval "$cc_bin" ${proxy_flags//$root/$planted} \
		-Wno-error -c -o "$obj" "$planted/$src"); then
		must_fail "$name" "$check" "$src" "$obj"
	else
		echo "  the plant does not compile: $name"
		failed=$((failed + 1))
	fi
}

# a call through a prototype of its own, no header included
must_fail_built 'http/url.c calls server_fini through extern' \
	proxy/http/url.c call_check 'extern void server_fini(void *s);
void rooms_check_planted(void);
void rooms_check_planted(void) { server_fini((void *)0); }'
# serve/ writing to the connection itself, and spelling a status line
must_fail_built 'serve/deliver.c calls client_out' proxy/serve/deliver.c \
	writer_check 'void rooms_check_planted_out(struct client *c);
void rooms_check_planted_out(struct client *c) { (void)client_out(c); }'
plant
echo 'static const char rooms_check_line[] = "HTTP/1.1 200 OK";' \
	>>"$planted/proxy/serve/pages.c"
must_fail 'serve/pages.c spells a status line' writer_check "" "" "$planted"

echo "rooms-check: $passed passed, $failed failed (order: $order)"
[ "$failed" -eq 0 ]
