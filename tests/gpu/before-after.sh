#!/usr/bin/env bash
# A refactor's proof on a GPU machine: the quick profile with the binary before and after,
# compared by the gate (identical keys, no regression), and the GPU layout conversions at
# 256 MiB in four processes, before and after alternating, so that a kernel moved or split
# shows any change beyond the noise between processes. Builds nothing.
#   tests/gpu/before-after.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR OUT_DIR
# About 6 minutes on the 1-GPU H200 (quick about 30 s a binary, layout about 60 s a process).
set -uo pipefail
before=$(cd "$1" && pwd)/interopbench
after=$(cd "$2" && pwd)/interopbench
out=$3
mkdir -p "$out"
log="$out/summary.txt"
step() { echo "== $*" | tee -a "$log"; }
run() { # run NAME CMD...: output to NAME.txt, exit code and wall time to the summary
  local name=$1; shift
  local t0=$EPOCHREALTIME
  "$@" >"$out/$name.txt" 2>&1
  local rc=$? t1=$EPOCHREALTIME
  printf '%-22s rc=%-3s %6ss  %s\n' "$name" "$rc" "$(python3 -c "print(f'{$t1 - $t0:.1f}')")" "${*##*/}" | tee -a "$log"
}
step "quick profile, before then after"
run quick-before "$before" run --profile quick --anonymize --out "$out/quick-before.json"
run quick-after "$after" run --profile quick --anonymize --out "$out/quick-after.json"
step "the gate: after against before (exit 0: no regression)"
run compare-quick "$after" compare "$out/quick-before.json" "$out/quick-after.json"
python3 - "$out/quick-before.json" "$out/quick-after.json" <<'PY' | tee -a "$log"
import json, sys
keys = [sorted(r["key"] for r in json.load(open(p))["results"]) for p in sys.argv[1:]]
print(f"keys: before {len(keys[0])}, after {len(keys[1])}, identical: {keys[0] == keys[1]}")
PY
step "layout conversions on the GPU at 256 MiB: before, after, before, after"
layout=(run -s 'layout_*' -a variant=gpu --size 256M --warmup 1 --min-samples 3 --max-samples 5 --noise 0.02
        --max-time 1.5 --sample-time 0.01 --no-topology --rounds 1 --anonymize)
for i in 1 2; do
  run "layout-before-$i" "$before" "${layout[@]}" --out "$out/layout-before-$i.json"
  run "layout-after-$i" "$after" "${layout[@]}" --out "$out/layout-after-$i.json"
done
python3 - "$out" <<'PY' | tee -a "$log"
import json, sys, os
out = sys.argv[1]
def medians(name):
    r = {}
    for i in (1, 2):
        for res in json.load(open(os.path.join(out, f"layout-{name}-{i}.json")))["results"]:
            m = [x for x in res.get("metrics", []) if x["name"] == "bandwidth"]
            if res["status"] == "ok" and m:
                r.setdefault(res["key"], []).append(m[0]["stats"]["median"])
    return r
b, a = medians("before"), medians("after")
worst = []
for k in sorted(b):
    if k not in a: print("missing after:", k); continue
    # After against before: the best of each side and the worst of each side.
    ratio = max(a[k]) / max(b[k])
    worst.append((ratio, k, min(b[k]), max(b[k]), min(a[k]), max(a[k])))
worst.sort()
print(f"{len(worst)} configurations; after/before (best of two processes each):")
for ratio, k, b0, b1, a0, a1 in worst[:8]:
    print(f"  {ratio:.4f}  {k}  before {b0/1e9:.1f}-{b1/1e9:.1f}  after {a0/1e9:.1f}-{a1/1e9:.1f} GB/s")
slower = [w for w in worst if w[0] < 0.99]
print(f"slower by more than 1% (best against best): {len(slower)}")
PY
