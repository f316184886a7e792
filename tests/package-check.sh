#!/usr/bin/env bash
# The Debian package, made, installed, used and purged on this machine:
#   - `cpack` in the build directory makes sumcache_VERSION_ARCH.deb, and
#     lintian finds no error in it (its warnings are printed; the top-level
#     README says why each one is kept);
#   - `dpkg -i` installs it: /usr/sbin/sumcache, the tools under /usr/bin,
#     the manual pages, /etc/sumcache/sumcache.conf (a conffile), the
#     unit, logrotate, a sumcache system user owning /var/cache,
#     /var/log and /var/lib/sumcache;
#   - the installed configuration passes `sumcache -t`, the unit passes
#     `systemd-analyze verify`, and the logrotate file `logrotate -d`;
#   - the installed binary, as the sumcache user on the installed
#     configuration (on PACKAGE_CHECK_PORT, 27128: the configuration's
#     3128 may be in use), proxies a request to a local origin, then answers it again
#     as a hit, logged under /var/log/sumcache, its disk tier under
#     /var/cache/sumcache; a forced logrotate moves the log and the node
#     writes a new one;
#   - `dpkg --purge` leaves none of the package's files, directories or
#     its user behind.
# Run as root (CI's machine); a package already installed is purged
# first. BUILD names the build directory (build-test).
# Prints "package-check: P passed, F failed".
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/checks.sh package-check
. deploy/lib.sh

if [ "$(id -u)" -ne 0 ]; then
  echo "package-check: needs root (dpkg -i)"; exit 1
fi
dpkg -s sumcache >/dev/null 2>&1 && dpkg --purge sumcache >/dev/null

out=$(realpath "$dir")/cpack.out
(cd "$build" && rm -f sumcache_*.deb && cpack -G DEB >"$out" 2>&1)
deb=$(ls "$build"/sumcache_*.deb 2>/dev/null | head -n 1)
check "cpack makes the package" [ -n "$deb" ]
[ -n "$deb" ] || { checks_done package-check; exit 1; }

lintian --tag-display-limit 0 "$deb" >"$dir/lintian.out" 2>&1
echo "  lintian says:"; sed 's/^/    /' "$dir/lintian.out"
check "lintian finds no error" bash -c "! grep -q '^E: ' '$dir/lintian.out'"

origin_pid=
node_pid=
cleanup() {
  [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null
  [ -n "$origin_pid" ] && kill "$origin_pid" 2>/dev/null
  dpkg -s sumcache >/dev/null 2>&1 && dpkg --purge sumcache >/dev/null 2>&1
}
trap cleanup EXIT

check "dpkg -i installs it" dpkg -i "$deb"
dpkg -L sumcache >"$dir/files.txt"
for f in /usr/sbin/sumcache /usr/bin/sumcache-sim /usr/bin/workload-gen \
    /usr/bin/replay /etc/sumcache/sumcache.conf /etc/logrotate.d/sumcache \
    /lib/systemd/system/sumcache.service \
    /usr/share/man/man8/sumcache.8.gz /usr/share/man/man5/sumcache.conf.5.gz \
    /usr/share/man/man1/sumcache-sim.1.gz /usr/share/doc/sumcache/copyright; do
  check "... $f" [ -e "$f" ]
done
check "... the configuration is a conffile" \
  bash -c "dpkg-query -W -f='\${Conffiles}' sumcache | grep -q /etc/sumcache/sumcache.conf"
check "... a sumcache system user" \
  bash -c "getent passwd sumcache | awk -F: '\$3 < 1000' | grep -q ."
for d in /var/cache/sumcache /var/log/sumcache /var/lib/sumcache; do
  check "... $d, the user's" [ "$(stat -c %U "$d" 2>/dev/null)" = sumcache ]
done
check "the installed configuration passes sumcache -t" \
  /usr/sbin/sumcache -t -c /etc/sumcache/sumcache.conf
check "the manual reads: sumcache.conf(5) has cache_dir" \
  bash -c "zcat /usr/share/man/man5/sumcache.conf.5.gz | mandoc -T ascii | sed 's/.\x08//g' | grep -q '^ *cache_dir'"
check "the unit passes systemd-analyze verify" \
  bash -c "out=\$(systemd-analyze verify /lib/systemd/system/sumcache.service 2>&1); echo \"\$out\"; [ -z \"\$out\" ]"
check "the logrotate file parses (logrotate -d)" \
  bash -c "logrotate -d /etc/logrotate.d/sumcache 2>&1 | grep -q 'rotating pattern: /var/log/sumcache'"

# the installed node at work, as its user
base=${PACKAGE_CHECK_PORT:-27128}
port=$base oport=$((base + 1))
"$build/demo-origin" -l "127.0.0.1:$oport" >"$dir/origin.out" 2>&1 &
origin_pid=$!
wait_port "$oport"
runuser -u sumcache -- /usr/sbin/sumcache -c /etc/sumcache/sumcache.conf \
  -o "http_listen=127.0.0.1:$port" >"$dir/node.out" 2>&1 &
node_pid=$!
wait_port "$port"
url="http://127.0.0.1:$oport/obj/pkg?size=2000&max_age=600"
get() { curl -s -o /dev/null -D - --proxy "http://127.0.0.1:$port" "$url"; }
check "the node proxies a request" bash -c "$(declare -f get); url='$url' port=$port; get | grep -q '^HTTP/1.1 200'"
check "... and answers it again as a hit" \
  bash -c "$(declare -f get); url='$url' port=$port; get | grep -qi '^X-Cache: HIT'"
check "... as the sumcache user" pgrep -u sumcache -x sumcache
sleep 1   # the access log's flush
check "... logged under /var/log/sumcache" \
  grep -q "TCP_MEM_HIT/200.*obj/pkg" /var/log/sumcache/access.log
check "... its disk tier under /var/cache/sumcache" \
  bash -c "ls /var/cache/sumcache | grep -q ."
# the installed logrotate, forced: the log moves, the node is told (its
# postrotate, with no systemd here), and the next line is in a new file
logrotate -f -s "$dir/logrotate.state" /etc/logrotate.d/sumcache \
  >"$dir/logrotate.out" 2>&1
check "logrotate rotates the access log" \
  bash -c "ls /var/log/sumcache | grep -q 'access.log.1'"
sleep 1
url="http://127.0.0.1:$oport/obj/after-rotate?size=100&max_age=600"
get >/dev/null
sleep 1
check "... and the node writes a new one after it" \
  grep -q "obj/after-rotate" /var/log/sumcache/access.log
check "... owned by the sumcache user" \
  [ "$(stat -c %U /var/log/sumcache/access.log)" = sumcache ]
kill "$node_pid"; wait "$node_pid" 2>/dev/null; node_pid=

check "dpkg --purge removes it" dpkg --purge sumcache
left=()
while read -r f; do
  # the directories it shares with others (/usr/bin) stay
  [ -e "$f" ] && ! { [ -d "$f" ] && dpkg -S "$f" >/dev/null 2>&1; } &&
    [ ! -d "$f" ] && left+=("$f")
done <"$dir/files.txt"
for f in /etc/sumcache /var/cache/sumcache /var/log/sumcache \
    /var/lib/sumcache; do
  [ -e "$f" ] && left+=("$f")
done
check "... leaving no file or directory of it" \
  bash -c "echo 'left: ${left[*]}'; [ ${#left[@]} -eq 0 ]"
check "... and no sumcache user or group" \
  bash -c "! getent passwd sumcache && ! getent group sumcache"

checks_done package-check
