#!/usr/bin/env python3
"""Derives the comparison fixtures from base.json, a real report (see README.md).

Run from this directory: python3 derive.py. Deterministic: the same base gives the same files.
"""
import copy
import json
import math

REGRESSED = "host_memcpy/size=262144,threads=multi"
NOISY = "host_memcpy/size=65536,threads=multi"


def quantile(s, q):
    # Linear interpolation between order statistics (type 7), as the tool computes it.
    h = (len(s) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (h - lo) * (s[hi] - s[lo])


def median_ci_ranks(n):
    # Largest k with P(Binomial(n, 1/2) < k) <= 2.5%; the interval is [x_(k), x_(n+1-k)].
    cdf, k = 0.0, 0
    for i in range(n):
        p = math.comb(n, i) / 2.0**n
        if cdf + p > 0.025:
            break
        cdf += p
        k = i + 1
    return (1, n) if k == 0 else (k, n + 1 - k)


def stats(samples):
    s = sorted(v for v in samples if v is not None)
    n = len(s)
    mean = sum(s) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in s) / (n - 1)) if n > 1 else 0.0
    lo, hi = median_ci_ranks(n)
    return {"n": n, "min": s[0], "max": s[-1], "mean": mean, "median": quantile(s, 0.5), "stddev": sd,
            "cv": sd / abs(mean) if mean else 0.0, "p05": quantile(s, 0.05), "p95": quantile(s, 0.95),
            "median_ci": [s[lo - 1], s[hi - 1]]}


def result(doc, key):
    return next(r for r in doc["results"] if r["key"] == key)


def scale(res, factors):
    """Multiplies the i-th sample by factors[i]; metrics where lower is better are divided."""
    for m in res["metrics"]:
        up = m["better"] == "higher"
        m["samples"] = [None if v is None else (v * f if up else v / f) for v, f in zip(m["samples"], factors)]
        m["stats"] = stats(m["samples"])


def write(name, doc):
    with open(name, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


base = json.load(open("base.json"))

# One result 10% slower: bandwidth samples x0.9, time samples /0.9.
doc = copy.deepcopy(base)
r = result(doc, REGRESSED)
scale(r, [0.9] * len(r["metrics"][0]["samples"]))
write("regression.json", doc)

# One tight result made noisy around the same median: x -> m * (x / m)**6 keeps every
# sample on its side of the median m and widens the spread (in log terms) six times.
doc = copy.deepcopy(base)
r = result(doc, NOISY)
for m in r["metrics"]:
    med = m["stats"]["median"]
    m["samples"] = [None if v is None else med * (v / med) ** 6 for v in m["samples"]]
    m["stats"] = stats(m["samples"])
write("noisy.json", doc)

# The same results, said to come from a machine with one GPU of a model no real machine has
# (so that it is other hardware wherever the tests run) and another NCCL.
doc = copy.deepcopy(base)
doc["devices"] = [{"ordinal": 0, "name": "Test GPU 0 (a fixture, no real machine)", "pcie": {"gen_current": 5, "width_current": 16,
                                                                  "gen_max": 5, "width_max": 16}}]
doc["software"]["nccl"] = "2.28.3"
write("other_machine.json", doc)

# Bad inputs, from a copy of the report cut to its first two results.
small = copy.deepcopy(base)
small["results"] = small["results"][:2]
text = json.dumps(small, indent=1)
open("bad/empty.json", "w").close()
open("bad/truncated.json", "w").write(text[: len(text) // 2])
open("bad/not_json.json", "w").write("size,bandwidth\n1048576,9.8e9\n")
write("bad/other_schema.json", {"schema": {"name": "some.other.tool", "version": "1.0"}, "results": []})
doc = copy.deepcopy(small)
doc["schema"]["version"] = "2.0"
write("bad/newer_major.json", doc)
doc = copy.deepcopy(small)
doc["results"][1] = copy.deepcopy(doc["results"][0])
write("bad/duplicate_key.json", doc)
