#!/usr/bin/env python3
"""usage: html_ticks.py DOM.html [CHART_ID ...]

Checks the axis ticks of every chart in a page dumped by headless Chromium
(--dump-dom): each axis (the text elements of class tick-x or tick-y with
their value in data-tick) has at least two ticks, and they are round: equally
spaced ticks are multiples of a step of 1, 2, 2.5 or 5 x 10^k; others (a log
axis) are each 1, 2, 2.5 or 5 x 10^k or a power of two. Named CHART_IDs
(svg[data-chart]) must be present. Prints one line per axis that fails and a
summary; exits 1 when an axis fails, no axis is found or a named chart is
missing.
"""
import math
import re
import sys

ROUND = (1.0, 2.0, 2.5, 5.0, 10.0)


def mantissa(v):
    a = abs(v)
    return a / 10 ** math.floor(math.log10(a))


def round_mantissa(v):
    return v == 0 or any(abs(mantissa(v) - c) < 1e-6 for c in ROUND)


def check(ticks):
    if len(ticks) < 2:
        return "%d tick(s), at least 2 wanted" % len(ticks)
    d = [b - a for a, b in zip(ticks, ticks[1:])]
    if all(abs(x - d[0]) <= 1e-6 * abs(d[0]) for x in d):
        s = d[0]
        if not round_mantissa(s):
            return "step %g is not 1, 2, 2.5 or 5 x 10^k" % s
        bad = [v for v in ticks if abs(v / s - round(v / s)) > 1e-6]
        return "not multiples of the step %g: %s" % (s, bad) if bad else None
    bad = [v for v in ticks if not (round_mantissa(v) or
                                    (v > 0 and abs(math.log2(v) - round(math.log2(v))) < 1e-9))]
    return "not round: %s" % bad if bad else None


def main():
    html = open(sys.argv[1], encoding="utf-8").read()
    want = sys.argv[2:]
    axes, fails = 0, 0
    for m in re.finditer(r"<svg\b([^>]*)>(.*?)</svg>", html, re.S):
        head, body = m.group(1), m.group(2)
        cid = re.search(r'data-chart="([^"]*)"', head)
        label = re.search(r'aria-label="([^"]*)"', head)
        name = cid.group(1) if cid else label.group(1) if label else "?"
        for axis in "xy":
            ticks = [float(v) for v in re.findall(
                r'<text[^>]*class="tick-%s"[^>]*data-tick="([^"]+)"' % axis, body)]
            if not ticks:
                continue
            axes += 1
            why = check(ticks)
            if why:
                fails += 1
                print("FAIL: %s %s axis %s: %s" % (name, axis, ticks, why))
        if cid and cid.group(1) in want:
            want.remove(cid.group(1))
    for w in want:
        fails += 1
        print("FAIL: no chart %s" % w)
    if not axes:
        fails += 1
        print("FAIL: no axis with ticks (class tick-x / tick-y, data-tick) in %s" % sys.argv[1])
    print("ticks: %d axes checked, %d failed" % (axes, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
