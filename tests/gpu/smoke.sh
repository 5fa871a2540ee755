#!/usr/bin/env bash
# GPU smoke and figure run: exercises every scenario family, topology and doctor on a GPU
# machine, and writes logs and reports under OUT. Builds nothing.
#   tests/gpu/smoke.sh BUILD_DIR OUT_DIR [section...]
# Sections: facts timing tests copy bidir alloc peer peer-sm nccl nccl-check mpi layout sanitize default
# profiles slowed compare storage pipeline transfers (default: all but sanitize).
# SMOKE_TRANSFERS_LIMIT (seconds, default 600) bounds the transfers run; the report is written when it is cut.
# Wall times on the 1-GPU H200 (reports/smoke-51c5c47/summary.txt and smoke-f68afe8/; tests:
# the suite run alone beside it): facts 3 s, timing 1 s, tests 94 s, copy 88 s, alloc 254 s,
# layout about 400 s, sanitize 39 s, storage about 250 s, pipeline about 250 s, default 28 s,
# profiles 199 s, slowed and compare 1 s (every NCCL configuration skips on one GPU). The whole
# script takes well over 10 minutes: split the sections over several runs where that is a limit.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; shift 2
sections=${*:-facts timing tests copy bidir alloc peer nccl nccl-check mpi layout storage pipeline transfers default profiles slowed compare}
ib="$build/interopbench"
mkdir -p "$out/logs" "$out/reports"
section=""
failures=()
log() { section=$1; echo "== $*" | tee -a "$out/summary.txt"; }
# run NAME TIMEOUT CMD...: output to logs/NAME.txt, exit code and wall time to the summary.
# A run whose exit code is not $expect (default 0) is a failure of its section.
run() {
  local name=$1 limit=$2; shift 2
  local want=${expect:-0}
  local t0=$EPOCHREALTIME
  timeout --signal=INT --kill-after=10 "$limit" "$@" >"$out/logs/$name.txt" 2>&1
  local rc=$?
  local t1=$EPOCHREALTIME
  printf '%-28s rc=%-3s %6ss  %s\n' "$name" "$rc" "$(python3 -c "print(f'{$t1 - $t0:.2f}')")" "$*" | tee -a "$out/summary.txt"
  [ "$rc" = "$want" ] || failures+=("$section/$name (exit $rc, expected $want)")
}
has() { [[ " $sections " == *" $1 "* ]]; }
R="$out/reports"

if has facts; then
  log "facts"
  run nvidia-smi 30 nvidia-smi
  run nvidia-smi-topo 30 nvidia-smi topo -m
  run nvidia-smi-nvlink 30 nvidia-smi nvlink -s
  run nvidia-smi-pcie 30 nvidia-smi --query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max --format=csv
  run ldd 10 ldd "$ib"
  run version 10 "$ib" version
  run topo 30 "$ib" topo
  run topo-json 30 "$ib" topo --format json
  run topo-export 30 "$ib" topo --export-xml "$R/topology.xml"
  run doctor 60 "$ib" doctor
  run list 10 "$ib" list
fi
# count_tests NAME WHAT [filtered]: the counts of the test run logged as NAME (a ctest run or
# the test binary's) into the summary as "WHAT: P passed, S skipped, F failed". A case that
# skipped itself (no GPU, no fixture) counts as skipped, never as passed; "filtered" (a run
# with -tc) leaves out the cases that doctest did not select.
count_tests() {
  python3 - "$out/logs/$1.txt" "$2" "${3:-}" <<'PY' | tee -a "$out/summary.txt"
import re, sys
text = open(sys.argv[1], errors="replace").read()
what, filtered = sys.argv[2], sys.argv[3] == "filtered"
m = re.search(r"(\d+)% tests passed(?:, (\d+) tests? failed)? out of (\d+)", text)
if m:  # ctest: passed counts the skipped ones too; they are listed "(Skipped)"
    failed, total = int(m.group(2) or 0), int(m.group(3))
    skipped = len(re.findall(r"^\s*\d+ - .*\(Skipped\)\s*$", text, re.M))
    print(f"{what}: {total - failed - skipped} passed, {skipped} skipped, {failed} failed")
    sys.exit()
m = re.search(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped", text)
if not m:
    print(f"{what}: no summary in {sys.argv[1]} (the run did not finish)")
    sys.exit()
passed, failed, not_run = int(m.group(2)), int(m.group(3)), int(m.group(4))
s = re.search(r"\[interopbench\] (\d+) test case\(s\) skipped themselves", text)
own = int(s.group(1)) if s else 0  # doctest counts them passed
skipped = own + (0 if filtered else not_run)
print(f"{what}: {passed - own} passed, {skipped} skipped, {failed} failed")
PY
}
if has tests; then
  log "doctest suite on the GPU machine: the gpu label first (one small configuration of every GPU scenario), then the whole suite"
  tb="$build/tests/interopbench_tests"
  # ctest where this is the build tree (its test list names this binary); where only the
  # binaries were copied, the test binary with the label's cases by name.
  tb_real="$(cd "$build" && pwd -P)/tests/interopbench_tests"
  if command -v ctest >/dev/null && { grep -qsF "$tb" "$build"/tests/interopbench_tests_tests-*.cmake ||
                                      grep -qsF "$tb_real" "$build"/tests/interopbench_tests_tests-*.cmake; }; then
    run gpu-label 300 ctest --test-dir "$build" -L gpu --output-on-failure
  else
    run gpu-label 300 "$tb" '-tc=gpu scenario: *'
  fi
  label=$(count_tests gpu-label "tests -L gpu" filtered)
  echo "$label"
  # On the GPU machine at least one GPU scenario is measured: a label that only skipped is a failure.
  [[ "$label" == *": 0 passed,"* ]] && failures+=("tests/gpu-label (nothing measured: $label)")
  run doctest 600 "$tb"
  count_tests doctest "tests"
fi
if has copy; then
  log "host<->device copies"
  run h2d-1 300 "$ib" run -s h2d_copy,d2h_copy --size 16M,256M,1G -a host_mem=pageable,pinned --out "$R/copy-1.json"
  run h2d-2 300 "$ib" run -s h2d_copy,d2h_copy --size 16M,256M,1G -a host_mem=pageable,pinned --out "$R/copy-2.json"
  run h2d-kinds 300 "$ib" run -s h2d_copy,d2h_copy --size 4K,64K,1M,512M -a host_mem=all -a engine=ce,sm --out "$R/copy-kinds.json"
  run host-memcpy 100 "$ib" run -s host_memcpy --size 1M,256M --out "$R/host-memcpy.json"
  run d2d 120 "$ib" run -s d2d_copy -a method=ce,sm --out "$R/d2d.json"
fi
if has bidir; then
  log "both directions, all GPUs"
  run bidir 200 "$ib" run -s bidir_copy,host_all_gpus --size 256M,1G -a engine=ce --out "$R/bidir.json"
fi
if has alloc; then
  log "allocation"
  run alloc-device 200 "$ib" run -s alloc_device -d 0 --out "$R/alloc-device.json"
  run alloc-ref 120 "$ib" run -s alloc_device -d 0 -a state=warm,cold --size 1M,64M --out "$R/alloc-ref.json"
  run alloc-conc 120 "$ib" run -s alloc_concurrent -d 0 --out "$R/alloc-conc.json"
  run alloc-pinned 120 "$ib" run -s alloc_host_pinned -d 0 --out "$R/alloc-pinned.json"
  run alloc-pipe 200 "$ib" run -s alloc_pipeline -d 0 -a pool=default_pool,default_pool_keep,own_pool -a temporaries=2,8 --size 1M,64M,512M --out "$R/alloc-pipe.json"
fi
if has peer; then
  log "peer copies and latency"
  run peer 300 "$ib" run -s 'peer_*,latency' --out "$R/peer.json"
fi
if has nccl; then
  log "NCCL single process"
  run nccl-ar 200 "$ib" run -s nccl_all_reduce --size 8,1G,8G --out "$R/nccl-ar.json"
  run nccl-big 300 "$ib" run -s nccl_all_gather,nccl_reduce_scatter,nccl_sendrecv,nccl_alltoall,nccl_broadcast,nccl_reduce --size 1G,8G --out "$R/nccl-big.json"
  NCCL_P2P_DISABLE=1 run nccl-nop2p 100 "$ib" run -s nccl_all_reduce --size 1G --out "$R/nccl-nop2p.json"
fi
if has nccl-check; then
  log "NCCL correctness over data types"
  run nccl-check 300 "$ib" run -s 'nccl_*' --size 1M -a dtype=all -a inplace=0,1 --warmup 1 --min-samples 3 --max-samples 5 --out "$R/nccl-check.json"
fi
if has mpi; then
  log "NCCL under mpirun"
  run nccl-mpi-ar 200 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE "$ib" run -s nccl_all_reduce --size 8,1G,8G --out "$R/nccl-mpi-ar.json"
  run nccl-mpi-big 300 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE "$ib" run -s nccl_all_gather,nccl_reduce_scatter,nccl_sendrecv --size 8G --out "$R/nccl-mpi-big.json"
fi
if has peer-sm; then
  log "first SM peer copy in a process (kernel loading while a stream is held)"
  run peer-sm 120 "$ib" run -s peer_copy -a engine=sm -a mode=write --size 1G --sample-time 0.02 --out "$R/peer-sm.json"
fi
if has layout; then
  log "layout and handoff"
  run layout 600 "$ib" run -s 'layout_*,handoff*' --out "$R/layout.json"
fi
if has timing; then
  log "wall times of the instant commands"
  for c in "topo" "list" "doctor" "version"; do
    run "time-${c}" 60 bash -c "TIMEFORMAT='%R s'; time $ib $c >/dev/null"
  done
fi
if has sanitize; then
  log "compute-sanitizer over a small run of every GPU scenario family"
  small=(--size 1M --warmup 0 --min-samples 2 --max-samples 2 --max-time 1)
  # API errors are left out: peer access "already enabled" is expected and handled, and
  # NCCL probes kernels internally; memory errors are what this run looks for.
  run memcheck 400 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 "$ib" run --profile quick "${small[@]}" --out "$R/memcheck.json"
  # dense_to_binary_kernel is left out: racecheck reports the hand-overs ordered by its named
  # barriers as hazards (see hand_over in src/gpu/convert_arrow_binary.cu); its results are checked.
  run racecheck 300 compute-sanitizer --tool racecheck --kernel-name-exclude kns=dense_to_binary_kernel --error-exitcode 99 "$ib" run -s 'layout_*' -a variant=gpu "${small[@]}" --out "$R/racecheck.json"
fi
if has storage; then
  log "storage: dd references and the storage family on one 4 GiB file (scratch dir under /tmp, removed after)"
  sd=$(mktemp -d /tmp/ib-smoke-storage.XXXXXX)
  f="$sd/ib-storage-v1-4294967296.dat" # the tool's own name: it creates the file and reuses it
  # One untimed-by-us run creates the 4 GiB pattern file and keeps it for the dd references.
  run storage-create 120 "$ib" run -s storage_read -a path=odirect -a cache=cold --size 4G --warmup 0 --min-samples 1 --max-samples 1 --storage-dir "$sd" --keep-files --no-topology --out "$R/storage-create.json"
  run storage-dd-direct 60 dd if="$f" of=/dev/null bs=16M iflag=direct
  run storage-dd-cold 60 bash -c "sync; echo 3 > /proc/sys/vm/drop_caches; dd if='$f' of=/dev/null bs=16M"
  run storage-dd-warm 60 dd if="$f" of=/dev/null bs=16M
  run storage-df 10 df -T "$sd"
  # fio, the storage reference, on the same file in the same run (FIO=path; the GPU machine
  # gets it only when a call carries it). Cold runs drop the file's pages first (fio's own
  # invalidate=1 and O_DIRECT); warm runs read a warm file with --invalidate=0.
  fio=${FIO:-}
  if [ -n "$fio" ] && [ -x "$fio" ]; then
    fj() { local name=$1; shift; run "fio-$name" 120 "$fio" --name="$name" --filename="$f" --bs=16M --output-format=json --output="$R/fio-$name.json" "$@"; }
    fj cold-psync --rw=read --direct=1 --ioengine=psync --size=4G
    fj cold-uring-qd32 --rw=read --direct=1 --ioengine=io_uring --iodepth=32 --size=4G
    fj cold-4jobs-qd8 --rw=read --direct=1 --ioengine=io_uring --iodepth=8 --numjobs=4 --offset_increment=1G --size=1G --group_reporting
    for jobs in 1 4 16; do
      run "fio-warm-prime-$jobs" 60 dd if="$f" of=/dev/null bs=16M
      fj "warm-${jobs}jobs" --rw=read --ioengine=psync --invalidate=0 --numjobs="$jobs" --offset_increment=$((4096 / jobs))M --size=$((4096 / jobs))M --group_reporting
    done
    run fio-write-direct 120 "$fio" --name=write --filename="$sd/fio-write.tmp" --rw=write --bs=16M --direct=1 --ioengine=io_uring --iodepth=16 --size=1G --output-format=json --output="$R/fio-write-direct.json"
    rm -f "$sd/fio-write.tmp"
    python3 - "$R" <<'PY' | tee -a "$out/summary.txt"
import glob, json, os, sys
for p in sorted(glob.glob(os.path.join(sys.argv[1], "fio-*.json"))):
    try:
        job = json.load(open(p))["jobs"][0]
        side = job["read"] if job["read"]["io_bytes"] else job["write"]
        print(f"  {os.path.basename(p)[4:-5]:<22} {side['bw_bytes'] / 1e9:6.2f} GB/s")
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f"  {os.path.basename(p)}: unreadable ({e})")
PY
  else
    echo "  fio: not run (set FIO to the fio binary)" | tee -a "$out/summary.txt"
  fi
  cat >"$out/storage-profile.json" <<'JSON'
{"name": "storage-figures", "description": "the storage figures: the read ceiling by threads and queue depth (warm and cold), every GPU path by threads, writes by threads, pinned H2D",
 "settings": {"warmup": 1, "min_samples": 3, "max_samples": 4, "noise": 0.01, "max_time_s": 20, "sample_time_s": 0.01, "rounds": 1},
 "scenarios": [
  {"pattern": "h2d_copy", "axes": {"size": ["256M"], "host_mem": ["pinned"], "engine": ["ce"], "device": ["0"]}},
  {"pattern": "storage_read", "axes": {"size": ["4G"], "path": ["buffered"], "cache": ["warm"], "threads": ["1", "2", "4", "8", "16"]}},
  {"pattern": "storage_read", "axes": {"size": ["4G"], "path": ["odirect"], "cache": ["cold"], "threads": ["1", "4", "16"]}},
  {"pattern": "storage_read", "axes": {"size": ["4G"], "path": ["io_uring"], "cache": ["cold"], "threads": ["1", "4"], "qd": ["8", "32"]}},
  {"pattern": "storage_read", "axes": {"size": ["4G"], "path": ["buffered"], "cache": ["cold"], "threads": ["1", "4", "16"]}},
  {"pattern": "storage_to_gpu", "axes": {"size": ["4G"], "path": ["pipelined"], "cache": ["warm"], "threads": ["1", "2", "4", "8", "16"], "device": ["0"]}},
  {"pattern": "storage_to_gpu", "axes": {"size": ["4G"], "path": ["pageable", "pinned", "mmap", "mmap_registered", "mmap_resident"], "cache": ["warm"], "device": ["0"]}},
  {"pattern": "storage_to_gpu", "axes": {"size": ["4G"], "path": ["odirect_pipelined", "io_uring_pipelined"], "cache": ["cold"], "threads": ["1", "4", "16"], "device": ["0"]}},
  {"pattern": "storage_to_gpu", "axes": {"size": ["4G"], "path": ["pipelined", "cufile"], "cache": ["cold"], "device": ["0"]}},
  {"pattern": "gpu_to_storage", "axes": {"size": ["1G"], "path": ["pinned", "pipelined"], "threads": ["1", "4", "8"], "device": ["0"]}},
  {"pattern": "gpu_to_storage", "axes": {"size": ["1G"], "path": ["cufile"], "device": ["0"]}}
 ]}
JSON
  run storage-figures 420 "$ib" run --profile "$out/storage-profile.json" --storage-dir "$sd" --keep-files --out "$R/storage.json"
  run storage-figures-md 10 "$ib" show --format markdown "$R/storage.json"
  # Side by side: the tool's best warm and cold GPU paths against pinned H2D and fio.
  python3 - "$R" <<'PY' | tee -a "$out/summary.txt"
import glob, json, os, sys
R = sys.argv[1]
def med(r, m="bandwidth"):
    for x in r.get("metrics", []):
        if x.get("name") == m and r.get("status") == "ok":
            return x["stats"]["median"]
    return 0.0
rep = json.load(open(os.path.join(R, "storage.json")))["results"]
def best(pred):
    got = [(med(r), r["key"]) for r in rep if pred(r)]
    return max(got) if got else (0.0, "none")
p = lambda r, k: r.get("params", {}).get(k)
h2d = best(lambda r: r["scenario"] == "h2d_copy")
rows = [("pinned h2d_copy 256MiB", h2d),
        ("storage_to_gpu warm, best path", best(lambda r: r["scenario"] == "storage_to_gpu" and p(r, "cache") == "warm")),
        ("storage_to_gpu warm mmap_resident", best(lambda r: r["scenario"] == "storage_to_gpu" and p(r, "path") == "mmap_resident")),
        ("storage_to_gpu warm mmap_registered (one-shot)", best(lambda r: r["scenario"] == "storage_to_gpu" and p(r, "path") == "mmap_registered")),
        ("storage_to_gpu warm pipelined, best threads", best(lambda r: r["scenario"] == "storage_to_gpu" and p(r, "path") == "pipelined" and p(r, "cache") == "warm")),
        ("storage_to_gpu cold, best path", best(lambda r: r["scenario"] == "storage_to_gpu" and p(r, "cache") == "cold")),
        ("storage_read cold, best method", best(lambda r: r["scenario"] == "storage_read" and p(r, "cache") == "cold")),
        ("storage_read warm, best threads", best(lambda r: r["scenario"] == "storage_read" and p(r, "cache") == "warm"))]
for f in sorted(glob.glob(os.path.join(R, "fio-*.json"))):
    try:
        job = json.load(open(f))["jobs"][0]
        rows.append(("fio " + os.path.basename(f)[4:-5], (job["read"]["bw_bytes"] or job["write"]["bw_bytes"], "")))
    except (OSError, ValueError, KeyError, IndexError):
        pass
print("  side by side (GB = 1e9 B/s; share of pinned H2D)")
for name, (bw, key) in rows:
    share = f"{bw / h2d[0]:5.2f}" if h2d[0] else "  -  "
    print(f"  {name:<48} {bw / 1e9:7.2f} GB/s  {share}  {key[:70]}")
PY
  run storage-left 10 ls -la "$sd"
  # Several --storage-dir entries (here two folders on the same drive, so the path is real,
  # not faster): the files striped over both, readers spread, the ceiling measured alike.
  mkdir -p "$sd/a" "$sd/b"
  run storage-two-dirs-read 120 "$ib" run -s storage_read -a path=buffered,io_uring -a cache=warm,cold -a threads=4 --size 1G --min-samples 3 --max-samples 3 --rounds 1 --storage-dir "$sd/a" --storage-dir "$sd/b" --out "$R/storage-two-dirs-read.json"
  run storage-two-dirs-gpu 120 "$ib" run -s storage_to_gpu -a path=pipelined,io_uring_pipelined -a cache=warm,cold -a threads=4 --size 1G -d 0 --min-samples 3 --max-samples 3 --rounds 1 --storage-dir "$sd/a" --storage-dir "$sd/b" --out "$R/storage-two-dirs-gpu.json"
  run storage-two-dirs-left 10 ls -la "$sd/a" "$sd/b"
  rm -rf "$sd"
fi
if has pipeline; then
  log "pipeline: naive vs tuned and each single fix, cold and warm, beside the standalone stages it is measured against; allocation at small batches (scratch dir under /tmp, removed after)"
  pd=$(mktemp -d /tmp/ib-smoke-pipeline.XXXXXX)
  cat >"$out/pipeline-profile.json" <<'JSON'
{"name": "pipeline-figures", "description": "the pipeline figures: every variant cold and warm on a 1 GB dataset, the standalone stages (the pipeline's read alone by threads, pinned H2D, the conversion kernel alone), and naive/+pool/tuned at small batches",
 "settings": {"warmup": 1, "min_samples": 3, "max_samples": 4, "noise": 0.02, "max_time_s": 5, "sample_time_s": 0.02, "rounds": 1},
 "scenarios": [
  {"pattern": "storage_read", "axes": {"size": ["1G"], "path": ["buffered"], "threads": ["1", "8"], "chunk": ["16M"], "cache": ["cold", "warm"]}},
  {"pattern": "pipeline_read", "axes": {"cache": ["cold", "warm"], "dataset": ["1G"], "batch": ["64M"], "host_mem": ["pageable", "pinned"]}},
  {"pattern": "pipeline_read", "axes": {"cache": ["cold", "warm"], "dataset": ["1G"], "batch": ["64M"], "host_mem": ["pinned"], "threads": ["2", "4", "8", "16"]}},
  {"pattern": "pipeline_read", "axes": {"cache": ["warm"], "dataset": ["256M"], "batch": ["64K", "1M"], "host_mem": ["pageable", "pinned"], "threads": ["1", "0"]}},
  {"pattern": "h2d_copy", "axes": {"size": ["1M", "64M"], "host_mem": ["pinned"], "engine": ["ce"], "device": ["0"]}},
  {"pattern": "pipeline_convert", "axes": {"batch": ["64K", "1M", "64M"], "device": ["0"]}},
  {"pattern": "pipeline", "axes": {"variant": ["naive", "+pinned", "+pool", "+gpu_convert", "+zero_copy", "+overlap", "+parallel_read", "+registered_cache", "tuned"], "cache": ["cold", "warm"], "dataset": ["1G"], "batch": ["64M"], "device": ["0"]}},
  {"pattern": "pipeline", "axes": {"variant": ["naive", "+pool", "tuned"], "cache": ["warm"], "dataset": ["256M"], "batch": ["64K", "1M"], "device": ["0"]}}
 ]}
JSON
  run pipeline-figures 360 "$ib" run --profile "$out/pipeline-profile.json" --storage-dir "$pd" --keep-files --progress --out "$R/pipeline.json"
  run pipeline-figures-md 10 "$ib" show --format markdown "$R/pipeline.json"
  # The PyTorch loader on the same kept files (1 GiB dataset: 35791394 rows of 30 bytes), then
  # one table: the tool's tuned pipeline against it, pinned H2D and the best cold read.
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    run pipeline-torch 300 bash -c "python3 '$(dirname "$0")/torch_loader.py' '$pd' 35791394 67108864 1 8 16 > '$R/torch-loader.jsonl'"
  else
    echo "  PyTorch loader: not run (no torch with CUDA here)" | tee -a "$out/summary.txt"
  fi
  python3 - "$R" <<'PY' | tee -a "$out/summary.txt"
import json, os, sys
R = sys.argv[1]
rep = json.load(open(os.path.join(R, "pipeline.json")))["results"]
def med(r, m):
    for x in r.get("metrics", []):
        if x.get("name") == m and r.get("status") == "ok":
            return x["stats"]["median"]
    return 0.0
def pick(scenario, metric, **params):
    got = [med(r, metric) for r in rep if r["scenario"] == scenario and all(r.get("params", {}).get(k) == v for k, v in params.items())]
    return max(got) if got else 0.0
h2d = pick("h2d_copy", "bandwidth", size="67108864")
cold_read = max([med(r, "bandwidth") for r in rep if r["scenario"] in ("pipeline_read", "storage_read") and r.get("params", {}).get("cache") == "cold"] or [0])
rows = [("pinned h2d_copy 64MiB", h2d)]
for cache in ("warm", "cold"):
    for v in ("naive", "+parallel_read", "+registered_cache", "tuned"):
        rows.append((f"pipeline {v} {cache}", pick("pipeline", "throughput", variant=v, cache=cache, dataset="1073741824", batch="67108864")))
rows.append(("best cold read (pipeline_read/storage_read)", cold_read))
torch_best = 0.0
try:
    for line in open(os.path.join(R, "torch-loader.jsonl")):
        j = json.loads(line)
        rows.append((j["loader"], j["throughput_GBps"] * 1e9))
        if j["threads"] == 8:
            torch_best = j["throughput_GBps"] * 1e9
except OSError:
    pass
print("  side by side (1 GiB dataset, 64 MiB batches; GB = 1e9 B/s; share of pinned H2D; x the PyTorch 8-thread loader)")
for name, bw in rows:
    share = f"{bw / h2d:5.2f}" if h2d else "  -  "
    times = f"{bw / torch_best:5.2f}x" if torch_best else "  -  "
    print(f"  {name:<52} {bw / 1e9:7.2f} GB/s  {share}  {times}")
tuned_cold = pick("pipeline", "throughput", variant="tuned", cache="cold", dataset="1073741824", batch="67108864")
if cold_read:
    print(f"  tuned cold / best cold read: {tuned_cold / cold_read:.2f}")
PY
  # The quick profile's pipeline pair alone (the whole quick profile runs in the profiles section).
  run pipeline-quick-pair 60 "$ib" run --profile quick -s pipeline -a variant=naive,tuned -a cache=warm -a dataset=128M -a batch=8M -d 0 --storage-dir "$pd" --out "$R/pipeline-quick.json"
  run pipeline-left 10 ls -la "$pd"
  rm -rf "$pd"
fi
if has transfers; then
  log "transfers: a pinned H2D copy beside a warm and beside a cold file->GPU read, each alone and together: the shared limit and the cost of sharing; a broadcast of GPU 0 to itself and pinned host memory (scratch dir under /tmp, removed after)"
  td=$(mktemp -d /tmp/ib-smoke-transfers.XXXXXX)
  warm='host:pinned -> gpu0 via ce 1G; file(warm) -> gpu0 via pipelined 1G'
  cold='host:pinned -> gpu0 via ce 1G; file(cold) -> gpu0 via pipelined 1G'
  bcast='gpu0 -> {gpu0,host:pinned} via sm 1G'
  # One GPU to all others needs a second GPU: on one, the expansion is empty and refused.
  all=(); [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')" -gt 1 ] && all=(-t 'gpu0 -> gpu* via ce 1G')
  run transfers-dry-run 30 "$ib" run --dry-run -t "$warm" -t "$cold" "${all[@]}" -t 'host:pinned -> gpu* via ce 512M' -t "$bcast" --storage-dir "$td"
  run transfers "${SMOKE_TRANSFERS_LIMIT:-600}" "$ib" run -t "$warm" -t "$cold" --storage-dir "$td" --rounds 1 --min-samples 5 --max-samples 10 --max-time 20 --progress --out "$R/transfers.json"
  # A broadcast: GPU 0's memory read once, written to itself and to pinned host memory by one kernel.
  run transfers-broadcast 120 "$ib" run -t "$bcast" --rounds 1 --min-samples 5 --max-samples 10 --max-time 20 --out "$R/transfers-broadcast.json"
  run transfers-broadcast-show 10 "$ib" show "$R/transfers-broadcast.json"
  run transfers-md 10 "$ib" show --format markdown "$R/transfers.json"
  # Bad sets: one error line and a hint, exit 2.
  expect=2 run transfers-bad-gpu 10 "$ib" run -t 'gpu7 -> host:pinned via ce 1G'
  expect=2 run transfers-bad-endpoint 10 "$ib" run -t 'gpuu0 -> host'
  expect=2 run transfers-bad-size 10 "$ib" run -t 'host -> gpu0 via ce 0'
  expect=2 run transfers-bad-dir 10 "$ib" run -t 'file:/etc/passwd(warm) -> gpu0'
  python3 - "$R/transfers.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys
rep = json.load(open(sys.argv[1]))["results"]
def med(r, m):
    for x in r.get("metrics", []):
        if x.get("name") == m and x["stats"].get("n"):
            return x["stats"]["median"]
    return None
print("  transfers (GB = 1e9 B/s): each set, its transfers together and alone, the annotation")
for r in rep:
    s = r["params"]["set"]
    if "+" not in s:
        continue
    print(f"  set {s}  [{r['status']}] {r.get('reason', '')}")
    for t in r.get("details", {}).get("sharing", {}).get("transfers", []):
        tog, alone = t.get("together"), t.get("alone")
        print(f"    #{t['index']} {t['transfer']:<44} together {tog / 1e9 if tog else float('nan'):7.2f}  alone {alone / 1e9 if alone else float('nan'):7.2f}  limited by {t.get('limited_by', '-')}")
    total = med(r, "bandwidth")
    if total:
        print(f"    summed {total / 1e9:.2f} GB/s, efficiency {r.get('details', {}).get('efficiency', '-')}, sharing cost {r.get('details', {}).get('sharing', {}).get('cost', 0) / 1e9:.2f} GB/s")
    print(f"    {r.get('details', {}).get('diagnosis', '(no diagnosis)')}")
PY
  rm -rf "$td"
fi
if has default; then
  log "the default job"
  run default 300 "$ib" run --out "$R/default.json"
fi
if has profiles; then
  log "profiles"
  run quick 120 "$ib" run --profile quick --out "$R/quick.json"
  run ci-1 300 "$ib" run --profile ci --out "$R/ci-1.json"
  run ci-2 300 "$ib" run --profile ci --out "$R/ci-2.json"
fi
if has slowed; then
  log "the ci profile with NCCL peer-to-peer disabled (a really slowed path)"
  NCCL_P2P_DISABLE=1 run ci-slow 300 "$ib" run --profile ci -s 'nccl_*' --size 64M,1G --out "$R/ci-slow.json"
fi
if has compare; then
  log "compare"
  run compare-ci 30 "$ib" compare "$R/ci-1.json" "$R/ci-2.json"
  run compare-ci-md 30 "$ib" compare --format markdown "$R/ci-1.json" "$R/ci-2.json"
  # The gate must flag the slowed run only where it measured something: with one GPU (or
  # no NCCL) every NCCL configuration is skipped in both reports, and nothing is to flag.
  measured=$(python3 -c 'import json, sys; print(sum(r.get("status") == "ok" for r in json.load(open(sys.argv[1])).get("results", [])))' "$R/ci-slow.json" 2>/dev/null || echo 0)
  if ((measured > 0)); then
    expect=1 run compare-slow 30 "$ib" compare "$R/ci-1.json" "$R/ci-slow.json"
  else
    run compare-slow-none-measured 30 "$ib" compare "$R/ci-1.json" "$R/ci-slow.json"
  fi
fi
tar -C "$out" -czf "$out/bundle.tar.gz" logs reports
if ((${#failures[@]})); then
  printf 'FAILED: %s\n' "${failures[@]}" | tee -a "$out/summary.txt"
  exit 1
fi
echo "all sections passed: $sections" | tee -a "$out/summary.txt"
