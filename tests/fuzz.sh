#!/usr/bin/env bash
# Builds the libFuzzer targets (HTTP heads, ICP, Squid digests, summary
# messages, the compact timed summary's) and runs each on a corpus kept between runs, then prints its
# executions and a closing line per target.
#
#   tests/fuzz.sh SECONDS          each target for SECONDS (CI: 20)
#   FUZZ_CORPUS=DIR tests/fuzz.sh SECONDS
#                                  corpora in DIR/corpus-<target> (default
#                                  DIR: build-fuzz), seeded from
#                                  tests/fuzz/corpus and our own encoders
#                                  and grown by every run
#
# A long run, to put millions of inputs through each decoder:
#   tests/fuzz.sh 900              15 minutes a target (about 1 hour)
# Exit status 1 if any target crashed; its input is left in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: tests/fuzz.sh SECONDS}
jobs=$(nproc)

CC=clang cmake -S . -B build-fuzz -DSUMCACHE_FUZZ=ON -DSUMCACHE_TESTS=OFF \
  -DSUMCACHE_WERROR=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz-http fuzz-icp \
  fuzz-digest fuzz-summary fuzz-cuckoo fuzz-seeds >/dev/null

root=${FUZZ_CORPUS:-build-fuzz}
corpus() { echo "$root/corpus-$1"; }
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
mkdir -p "$seeds"/corpus-{icp,digest,summary,cuckoo}
build-fuzz/fuzz-seeds "$seeds"
cp -r tests/fuzz/corpus/http "$seeds/corpus-http"
for t in http icp digest summary cuckoo; do
  mkdir -p "$(corpus "$t")"
  cp -n "$seeds/corpus-$t"/* "$(corpus "$t")/"
done

status=0
for t in http icp digest summary cuckoo; do
  echo "== fuzz-$t for ${seconds}s on $(corpus "$t")"
  if build-fuzz/fuzz-$t -max_total_time="$seconds" -max_len=4096 \
      -artifact_prefix=build-fuzz/ "$(corpus "$t")" \
      > build-fuzz/fuzz-$t.log 2>&1; then
    runs=$(grep -Eo '^#[0-9]+' build-fuzz/fuzz-$t.log | tail -n 1)
    echo "== fuzz-$t ran ${runs#\#} executions; corpus $(ls "$(corpus "$t")" | wc -l) inputs"
    echo "fuzz-$t: 1 passed, 0 failed"
  else
    tail -n 40 build-fuzz/fuzz-$t.log
    echo "fuzz-$t: 0 passed, 1 failed"
    status=1
  fi
done
exit $status
