#!/usr/bin/env bash
# Installs what is missing, then builds and runs every sumcache test twice
# (unit, end-to-end, and against a real Squid):
# a normal build and an AddressSanitizer + UBSan build, warnings as errors.
# The normal build's end-to-end suites run again with every node at
# workers 4.
# After the normal build, a 3-node cluster replays a small trace through
# deploy/compare.sh and its report must add up (tests/cluster-check.sh).
# In both builds the simulator runs a small trace and must reproduce the
# Bloom false-positive formula within 10 % (tests/sim-check.sh), and
# headless Chromium browses through a 3-node cluster and reads every
# node's status page (tests/browser-check.sh; screenshots are left in
# BUILD/browser-check/), and apt fetches a package twice over https through
# an intercepting node (tests/apt-check.sh). The
# deployment files are checked with the tools Debian has
# (tests/deploy-check.sh), the manual pages against the tables they are
# written from and mandoc's lint (tests/man-check.sh), and every include
# and every call between proxy/'s rooms must point down, as the compiler
# and nm see them in the normal build (tests/rooms-check.sh). A
# ThreadSanitizer build stresses the shared store from four threads and
# runs the end-to-end suites against its daemon at workers 4, a 30 s
# stress of 200 clients included (tests/tsan-check.sh). The
# Debian package is built, checked by lintian, installed with dpkg,
# used, and purged (tests/package-check.sh).
# Each fuzz target (HTTP, ICP, Squid digest, summary message) runs briefly
# on its seed corpus at the end.
#   FUZZ_SECONDS=N   how long each fuzzer runs (default 20; 0 skips them)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

./deploy/bootstrap.sh

jobs=$(nproc)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

suite() {
  local dir=$1; shift
  echo "== build $dir ($*)"
  cmake -S . -B "$dir" -DSUMCACHE_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  echo "== unit tests ($dir)"
  "$dir/tests/unit-tests" --jobs "$jobs" 2>&1 | tee -a "$log"
  echo "== end-to-end tests ($dir)"
  "$dir/tests/e2e-tests" --jobs "$jobs" 2>&1 | tee -a "$log"
  echo "== interoperability tests with Squid ($dir)"
  "$dir/tests/squid-tests" --jobs "$jobs" 2>&1 | tee -a "$log"
  echo "== simulator check ($dir)"
  BUILD=$dir ./tests/sim-check.sh 2>&1 | tee -a "$log"
  echo "== browser check ($dir)"
  BUILD=$dir ./tests/browser-check.sh 2>&1 | tee -a "$log"
  echo "== apt check ($dir)"
  BUILD=$dir ./tests/apt-check.sh 2>&1 | tee -a "$log"
}

status=0
suite build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo || status=1

# The end-to-end suites again with every node at workers 4.
echo "== end-to-end tests at workers 4 (build-test)"
SUMCACHE_TEST_WORKERS=4 build-test/tests/e2e-tests --jobs "$jobs" 2>&1 |
  tee -a "$log" || status=1

# Includes and calls between proxy/'s rooms, read from the real build.
echo "== rooms check (build-test)"
./tests/rooms-check.sh build-test 2>&1 | tee -a "$log" || status=1

# The node's threads under ThreadSanitizer: the shared store stressed,
# a planted race caught, the end-to-end suites against a TSan daemon; a
# race report fails the run.
echo "== ThreadSanitizer check (build-tsan)"
E2E=build-test ./tests/tsan-check.sh build-tsan 2>&1 | tee -a "$log" || status=1

# The replay report end to end (deploy/compare.sh on a 3-node cluster).
echo "== cluster replay check (build-test)"
BUILD=build-test ./tests/cluster-check.sh 2>&1 | tee -a "$log" || status=1

# Sample configs, systemd unit, container image, Kubernetes manifests.
echo "== deployment files check (build-test)"
BUILD=build-test ./tests/deploy-check.sh 2>&1 | tee -a "$log" || status=1

# The manual pages the build writes from the code's tables.
echo "== manual pages check (build-test)"
BUILD=build-test ./tests/man-check.sh 2>&1 | tee -a "$log" || status=1

# The READMEs: the front page's size, every link resolving.
echo "== documentation check"
./tests/docs-check.sh 2>&1 | tee -a "$log" || status=1

# The Debian package: made by cpack, lintian, installed, used, purged.
echo "== package check (build-test)"
BUILD=build-test ./tests/package-check.sh 2>&1 | tee -a "$log" || status=1

# ASan's quarantine would hold freed buffers and hide (or fake) memory
# growth; a small one keeps the bounded-memory test meaningful.
export ASAN_OPTIONS=quarantine_size_mb=16:detect_leaks=1:abort_on_error=0
export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
suite build-asan -DCMAKE_BUILD_TYPE=Debug -DSUMCACHE_SANITIZE=ON || status=1

fuzz_seconds=${FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" -gt 0 ]; then
  ./tests/fuzz.sh "$fuzz_seconds" 2>&1 | tee -a "$log" || status=1
fi

# What failed, by name, so that a log cut in its middle still says it;
# then one closing line over every suite above.
grep -E '^\[FAIL\]|^  FAIL |^\[----\].*(Assertion|CRASH|[Cc]rash|Timed out)' "$log" |
  sed 's/^/failed: /' || true
awk '
  /Synthesis: Tested:/ { for (i = 1; i <= NF; i++) {
      if ($i == "Passing:") p += $(i + 1)
      if ($i == "Failing:" || $i == "Crashing:") f += $(i + 1) } }
  /^fuzz-[a-z]*: / { p += $2; f += $4 }
  /^(cluster|sim|deploy|browser|apt|rooms|man|package|docs|tsan)-check: [0-9]+ passed/ { p += $2; f += $4 }
  END { printf "%d passed, %d failed\n", p, f; exit (f > 0) }' "$log" || status=1
exit $status
