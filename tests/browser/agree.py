#!/usr/bin/env python3
"""Holds a status page to /metrics.

    agree.py PAGE.json METRICS.txt

PAGE.json is what cdp.py printed for the status page, with --eval giving
every element that carries data-metric: [[selector, value, tolerance]...].
A selector is a series name with the labels it narrows to; the page's
number must equal the sum of every /metrics series of that name whose
labels include those (so sumcache_interproxy_messages_total{type="x"}
sums over peers and directions). Exits 1 on any disagreement, or if the
page showed no numbers at all.
"""
import json
import re
import sys

SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(selector):
    m = SERIES.match(selector + " 0")
    return m.group(1), dict(LABEL.findall(m.group(2) or ""))


def main(page_path, metrics_path):
    series = []
    with open(metrics_path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            m = SERIES.match(line.strip())
            if m is None:
                print("unreadable /metrics line: " + line.strip())
                return 1
            series.append((m.group(1), dict(LABEL.findall(m.group(2) or "")),
                           float(m.group(3))))
    with open(page_path) as f:
        shown = json.load(f)["eval"]
    if not shown:
        print("the page shows no numbers with data-metric")
        return 1
    bad = 0
    for selector, value, tolerance in shown:
        name, want = parse(selector)
        matched = [v for n, labels, v in series if n == name and
                   all(labels.get(k) == x for k, x in want.items())]
        if not matched:
            print("%s: on the page (%s), not in /metrics" % (selector, value))
            bad += 1
            continue
        total = sum(matched)
        slack = float(tolerance) if tolerance else 1e-9 * max(1, abs(total))
        ok = abs(float(value) - total) <= slack
        print("%-4s %s page %s /metrics %.17g" % ("ok" if ok else "DIFF",
                                                 selector, value, total))
        bad += not ok
    print("%d numbers compared, %d disagree" % (len(shown), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
