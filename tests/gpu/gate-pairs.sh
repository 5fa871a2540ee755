#!/usr/bin/env bash
# Does the gate cry wolf between processes, and does it still catch a slowdown?
#
#   tests/gpu/gate-pairs.sh BIN PAIRS OUTDIR [run options...]
#
# Runs `BIN run [run options] --out OUTDIR/run-K.json` PAIRS+1 times back to back (no
# options: the default profile), compares each run with the next (PAIRS back-to-back
# pairs), and counts the verdicts: every regression of an unchanged build is a false alarm.
# Then, for every pair, the new report's samples are slowed by 10% (bandwidths x 0.9, times
# / 0.9; round medians alike) and compared again: each result whose comparison could detect
# a 10% change (detectable <= 10%, "stable") must now be a regression, unless the pair itself
# moved the other way by enough that less than its detectable change is left. Writes
# OUTDIR/summary.json and prints the figures: false regressions, stable share per family,
# caught share, wall time per run. Exit 1 on a false regression or a missed slowdown.
# ANALYZE_ONLY=1 compares and counts again over the runs already in OUTDIR (with BIN's compare).
# FIRST=K starts the runs at run-K (a series split over several sittings: the earlier runs are
# already in OUTDIR); LAST=K stops them after run-K (default: run-PAIRS).
set -u
BIN=${1:?binary}; PAIRS=${2:?pairs}; OUT=${3:?output folder}; shift 3
mkdir -p "$OUT"
for ((k = ${FIRST:-0}; k <= ${LAST:-$PAIRS} && ${ANALYZE_ONLY:-0} == 0; k++)); do
  t0=$EPOCHREALTIME
  "$BIN" run "$@" --out "$OUT/run-$k.json" -q
  rc=$?
  t1=$EPOCHREALTIME
  echo "run $k: exit $rc, $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s" | tee -a "$OUT/runs.txt"
done
[ "${LAST:-$PAIRS}" -lt "$PAIRS" ] && exit 0  # the rest of the series comes later
for ((k = 0; k < PAIRS; k++)); do
  "$BIN" compare "$OUT/run-$k.json" "$OUT/run-$((k + 1)).json" --format json --out "$OUT/pair-$k.json" > /dev/null
  echo "pair $k: compare exit $?" >> "$OUT/runs.txt"
done
python3 - "$BIN" "$OUT" "$PAIRS" <<'EOF'
import json, subprocess, sys, collections
bin_, out, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])

def slowed(report, factor=0.9):
    r = json.loads(json.dumps(report))
    for res in r["results"]:
        for m in res.get("metrics", []):
            f = factor if m.get("better", "higher") == "higher" else 1 / factor
            m["samples"] = [None if v is None else v * f for v in m.get("samples", [])]
            if "round_medians" in m:
                m["round_medians"] = [v * f for v in m["round_medians"]]
            st = m.get("stats", {})
            for k in ("min", "max", "mean", "median", "p05", "p95", "median_ci_lo", "median_ci_hi", "stddev"):
                if isinstance(st.get(k), (int, float)):
                    st[k] = st[k] * f  # f > 0 keeps the order of every statistic
    return r

totals = collections.Counter()
fam_stable = collections.defaultdict(lambda: [0, 0])
caught = missed = offset = 0
missed_keys = []
false_alarms = []
noisy = collections.Counter()
for k in range(pairs):
    cmp_ = json.load(open(f"{out}/pair-{k}.json"))
    for r in cmp_["results"]:
        totals[r["verdict"]] += 1
        if r["verdict"] == "regression":
            false_alarms.append(f"pair {k}: {r['key']}: {r['reason']}")
        gated = [m for m in r.get("metrics", []) if m.get("gated")]
        if any(m.get("noisy") for m in gated):
            noisy[r["family"]] += 1
    new = json.load(open(f"{out}/run-{k + 1}.json"))
    slow_path = f"{out}/slowed-{k}.json"
    json.dump(slowed(new), open(slow_path, "w"))
    p = subprocess.run([bin_, "compare", f"{out}/run-{k}.json", slow_path, "--format", "json"], capture_output=True, text=True)
    slow = json.loads(p.stdout)
    for r in slow["results"]:
        gated = [m for m in r.get("metrics", []) if m.get("gated") and m.get("ratio") is not None]
        if not gated:
            # Measured on both sides but no ratio (too few samples, say): it sees nothing.
            if r["verdict"] == "inconclusive":
                fam_stable[r["family"]][1] += 1
            continue
        m = gated[0]
        stable = m.get("detectable", 1) <= 0.10 + 1e-12
        fam_stable[r["family"]][0] += stable
        fam_stable[r["family"]][1] += 1
        if stable:
            # What the pair itself moved adds to the 10% or takes from it: a slowed result
            # that moved less than it can detect (the new run was faster to begin with) is
            # rightly not a regression; only one that moved more and was not called is missed.
            moved = 1 - m["ratio"] if m.get("better", "higher") == "higher" else m["ratio"] - 1
            if r["verdict"] == "regression":
                caught += 1
            elif moved < m["detectable"]:
                offset += 1
            else:
                missed += 1
                missed_keys.append(f"pair {k}: {r['key']}: {r['verdict']} ({r['reason']})")
summary = {
    "pairs": pairs,
    "verdicts": dict(totals),
    "false_regressions": false_alarms,
    "noisy_results_per_family": dict(noisy),
    "stable_share_per_family": {f: {"stable": s, "compared": n, "share": s / n if n else None} for f, (s, n) in sorted(fam_stable.items())},
    "slowdown_10pct": {"caught": caught, "missed": missed, "offset_by_the_pair": offset, "missed_keys": missed_keys},
}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(f"{pairs} back-to-back pairs: verdicts {dict(totals)}")
print(f"false regressions: {len(false_alarms)}")
for a in false_alarms:
    print("  " + a)
print(f"10% slowdown caught on stable results: {caught} of {caught + missed}"
      f" ({offset} more not called because the pair itself had moved the other way by more than the 10% left visible)")
for m in missed_keys:
    print("  missed " + m)
all_s = sum(s for s, _ in fam_stable.values()); all_n = sum(n for _, n in fam_stable.values())
summary["stable_share"] = all_s / all_n if all_n else None
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(f"stable share overall: {all_s} / {all_n}  {100.0 * all_s / all_n if all_n else 0:.1f}%")
print("stable share per family (detectable change <= 10%):")
for f, (s, n) in sorted(fam_stable.items()):
    print(f"  {f:10s} {s:4d} / {n:4d}  {100.0 * s / n if n else 0:5.1f}%")
sys.exit(1 if false_alarms or missed else 0)
EOF
