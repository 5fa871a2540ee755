#!/usr/bin/env bash
# Layout conversions against the device-local copy, before and after a kernel change, on one
# GPU machine; builds nothing. Every step is logged and timed; a failing step is recorded in
# summary.txt and the script goes on.
#   tests/gpu/layout-roofline.sh BIN_BEFORE BIN_AFTER OUTDIR
# BIN_BEFORE / BIN_AFTER: interopbench binaries (same CLI). A test binary beside BIN_AFTER
# (BIN_AFTER's dir/tests/interopbench_tests) runs the GPU edge tests when present.
# Writes: layout-after.json, layout-before.json (every layout scenario, variant gpu,
# 16M/256M/1G), d2d.json (device-local copy, both methods), shapes-*.json (non-default
# shapes), gpu-tests.txt, ncu-*.txt (Nsight Compute on the worst cases, before and after),
# tables *.md and summary.txt. Budget: well under 5 minutes.
set -uo pipefail
if [ $# -lt 3 ]; then echo "usage: $0 BIN_BEFORE BIN_AFTER OUTDIR" >&2; exit 2; fi
before=$1; after=$2; out=$3
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
# The whole script stops starting steps past BUDGET_S seconds (default 270), and no step
# runs past it: what ran is kept, what did not is listed as skipped.
budget=${BUDGET_S:-270}
step() { # step NAME LIMIT_S CMD...: stdout+stderr to NAME.log, status to the summary
  local name=$1 limit=$2; shift 2
  local left=$((budget - SECONDS))
  if ((left < 5)); then
    printf '%-26s skipped: time budget spent  %s\n' "$name" "$*" | tee -a "$summary"
    return 0
  fi
  ((limit > left)) && limit=$left
  local t0=$SECONDS
  timeout --signal=INT --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  printf '%-26s rc=%-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - t0))" "$*" | tee -a "$summary"
  return 0
}
# Modest sampling: the two runs of each configuration stay short.
# One round each (the before binary predates rounds; fills and checks of 1 GiB cost most).
sampling=(--warmup 1 --min-samples 3 --max-samples 5 --noise 0.02 --max-time 1.5 --sample-time 0.01 --no-topology)
# shellcheck disable=SC2054 # commas inside arguments, not between elements
layout=(-s 'layout_transpose,layout_aos_soa,layout_arrow_dense,layout_strided' -a variant=gpu --size 16M,256M,1G)

step facts 20 nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
step version-after 10 "$after" version
step version-before 10 "$before" version

# 1. The device-local copy first: the roofline everything else is read against.
step d2d 60 "$after" run -s d2d_copy --size 16M,64M,256M,512M,1G -a method=ce,sm "${sampling[@]}" --rounds 1 --out "$out/d2d.json"

# 2. The GPU edge tests (one element, one row, one column, primes, tile and sector edges).
tests_bin=$(dirname "$after")/tests/interopbench_tests
if [ -x "$tests_bin" ]; then
  step gpu-tests 60 "$tests_bin" --test-case='gpu:*'
else
  echo "gpu-tests: no test binary at $tests_bin (skipped)" | tee -a "$summary"
fi

# 3. All layout scenarios, after and before.
step layout-after 120 "$after" run "${layout[@]}" "${sampling[@]}" --rounds 1 --out "$out/layout-after.json"
step layout-before 100 "$before" run "${layout[@]}" "${sampling[@]}" --out "$out/layout-before.json"

# 4. Nsight Compute on the worst cases, before and after: one tiny run each, few launches.
tiny=(--warmup 0 --min-samples 1 --max-samples 1 --max-time 1 --sample-time 0.0001 --no-topology)
ncu_bin=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
if [ -z "$ncu_bin" ]; then
  echo "ncu: not found (skipped)" | tee -a "$summary"
else
  # shellcheck disable=SC2054 # commas inside arguments, not between elements
  ncu_opts=(--clock-control none --target-processes all -c 2 --csv --page details
            --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats
            # DRAM sectors read and written against the bytes the conversion needs: what is
            # fetched twice (a halo evicted before its second tile reads it, say) shows here.
            --metrics dram__sectors_read.sum,dram__sectors_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum)
  cases=(
    "transpose-int8-square|transpose_kernel|-s layout_transpose -a variant=gpu -a dtype=int8 -a shape=square --size 256M"
    "transpose-int8-wide|transpose_kernel|-s layout_transpose -a variant=gpu -a dtype=int8 -a shape=wide --size 64M"
    "transpose-fp16-wide|transpose_kernel|-s layout_transpose -a variant=gpu -a dtype=fp16 -a shape=wide --size 64M"
    "binary-from-dense|dense_to_binary_kernel|-s layout_arrow_dense -a variant=gpu -a dtype=binary -a direction=from_dense --size 64M"
    "soa-to-aos-packed|soa_to_aos_kernel|-s layout_aos_soa -a variant=gpu -a record=packed -a direction=soa_to_aos --size 64M"
  )
  for c in "${cases[@]}"; do
    IFS='|' read -r name kernel args <<<"$c"
    for which in before after; do
      bin=$before; extra=""; [ "$which" = after ] && bin=$after && extra="--rounds 1"
      # shellcheck disable=SC2086
      step "ncu-$name-$which" 25 "$ncu_bin" "${ncu_opts[@]}" -k "regex:$kernel" "$bin" run $args "${tiny[@]}" $extra --quiet
      [ -s "$out/ncu-$name-$which.log" ] && cp "$out/ncu-$name-$which.log" "$out/ncu-$name-$which.txt"
    done
  done
fi

# 5. Non-default sizes (non-power-of-two; shapes come out odd at every size) and the other shapes.
step shapes-after 30 "$after" run -s 'layout_transpose' -a variant=gpu -a dtype=int8,fp16,fp32,fp64 -a shape=square,tall,wide --size 3M,100M "${sampling[@]}" --rounds 1 --out "$out/shapes-after.json"
step shapes-strided 20 "$after" run -s 'layout_strided' -a variant=gpu -a shape=tall,wide --size 100M "${sampling[@]}" --rounds 1 --out "$out/shapes-strided.json"

# 6. Tables and the comparison.
for r in d2d layout-after layout-before shapes-after shapes-strided; do
  [ -s "$out/$r.json" ] && step "md-$r" 20 "$after" show --format markdown "$out/$r.json"
done
[ -s "$out/layout-before.json" ] && [ -s "$out/layout-after.json" ] &&
  step compare 30 "$after" compare --format markdown "$out/layout-before.json" "$out/layout-after.json"
for r in d2d layout-after layout-before shapes-after shapes-strided; do
  [ -s "$out/md-$r.log" ] && cp "$out/md-$r.log" "$out/$r.md"
done

# 7. A short table last: efficiency per configuration, before and after.
python3 - "$out" <<'PY' 2>&1 | tee "$out/efficiency.md"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return {r["key"]: r for r in json.load(f).get("results", [])}
    except Exception as e:
        print(f"({name}: {e})"); return {}
def med(r, m):
    for x in r.get("metrics", []) or []:
        if x.get("name") == m:
            return (x.get("stats") or {}).get("median")
    return None
b, a = load("layout-before.json"), load("layout-after.json")
print("| configuration | before | after | after (traffic) | status |")
print("| --- | --- | --- | --- | --- |")
for k in sorted(set(a) | set(b)):
    fb, fa = med(b.get(k, {}), "efficiency"), med(a.get(k, {}), "efficiency")
    ft = med(a.get(k, {}), "efficiency_traffic")
    f = lambda x: "" if x is None else f"{100 * x:.0f}%"
    print(f"| {k} | {f(fb)} | {f(fa)} | {f(ft)} | {a.get(k, {}).get('status', '?')} |")
for k, r in sorted(load("d2d.json").items()):
    bw = med(r, "bandwidth")
    print(f"d2d {k}: {'' if bw is None else f'{bw / 1e9:.0f} GB/s counted once'} ({r.get('status')})")
PY
echo "done; see $summary" | tee -a "$summary"
exit 0
