#!/usr/bin/env bash
# Runs a host-only scenario as two MPI ranks and checks that rank 0 wrote one merged
# report holding both ranks' figures and machines ("hosts"), and that the tables name the
# slowest rank. Needs OpenMPI (mpirun) and python3.
# Usage: .ci/mpi-test.sh [BUILD_DIR]   (default: build)
set -euo pipefail

build=${1:-build}
bin="$build/interopbench"
[[ -x "$bin" ]] || { echo "mpi-test: $bin not found; build first" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "mpi-test: mpirun not found; install OpenMPI" >&2; exit 2; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

mpirun --allow-run-as-root --oversubscribe -np 2 \
    "$bin" run --scenario host_memcpy --size 1M --out "$out/report.json"

python3 - "$out" <<'PY'
import json, os, sys

out = sys.argv[1]
files = sorted(os.listdir(out))
if files != ["report.json"]:
    sys.exit(f"mpi-test: expected exactly one report, found {files}")
with open(os.path.join(out, "report.json")) as f:
    report = json.load(f)

results = report.get("results", [])
if not results:
    sys.exit("mpi-test: the report has no results")
keys = [r["key"] for r in results]
if len(keys) != len(set(keys)):
    sys.exit("mpi-test: a configuration appears more than once: the ranks' results were not merged")
for r in results:
    where = r["key"]
    if r["scenario"] != "host_memcpy":
        sys.exit(f"mpi-test: {where}: unexpected scenario")
    if r["status"] != "ok":
        sys.exit(f"mpi-test: {where}: status {r['status']} ({r.get('reason')})")
    d = r.get("details", {})
    if d.get("world_size") != 2:
        sys.exit(f"mpi-test: {where}: world_size is {d.get('world_size')}, expected 2")
    ranks = d.get("ranks", [])
    if sorted(e.get("rank") for e in ranks) != [0, 1]:
        sys.exit(f"mpi-test: {where}: per-rank figures are missing: {ranks}")
    primary = r["metrics"][0]["name"]
    medians = {}
    for e in ranks:
        m = e.get("metrics", {}).get(primary, {})
        if e.get("status") != "ok" or not m.get("n") or not m.get("median", 0) > 0:
            sys.exit(f"mpi-test: {where}: rank {e.get('rank')} has no {primary} figures: {e}")
        medians[e["rank"]] = m["median"]
    slowest = d.get("slowest_rank")
    if slowest not in medians:
        sys.exit(f"mpi-test: {where}: slowest_rank {slowest} is not a rank")
    if r["metrics"][0]["stats"]["median"] != medians[slowest]:
        sys.exit(f"mpi-test: {where}: the merged median is not the slowest rank's")
hosts = report.get("hosts")
if not isinstance(hosts, list) or [h.get("rank") for h in hosts] != [0, 1]:
    sys.exit(f"mpi-test: the report's hosts do not hold both ranks' machines, in rank order: {hosts}")
for h in hosts:
    where = f"hosts[{h['rank']}]"
    for key, kind in (("local_rank", int), ("device", str), ("host", dict), ("software", dict), ("devices", list)):
        if not isinstance(h.get(key), kind):
            sys.exit(f"mpi-test: {where}.{key} is missing or not a {kind.__name__}: {h}")
    if "topology_hash" not in h or "conditions" not in h:
        sys.exit(f"mpi-test: {where} lacks topology_hash or conditions: {h}")
    for key in ("hostname", "os", "kernel", "cpu", "logical_cpus", "memory_bytes"):
        if not h["host"].get(key):
            sys.exit(f"mpi-test: {where}.host.{key} is missing: {h['host']}")
    if "cuda_available" not in h["software"] or not isinstance(h["software"].get("libraries"), list):
        sys.exit(f"mpi-test: {where}.software is not the software block: {h['software']}")
if hosts[0]["topology_hash"] != hosts[1]["topology_hash"]:
    sys.exit("mpi-test: two ranks of one host have different topology hashes")
if report["host"].get("hostname") != hosts[0]["host"]["hostname"]:
    sys.exit("mpi-test: the top-level host is not rank 0's")
print(f"mpi-test: ok: {len(results)} merged result(s), 2 ranks each; hosts holds both ranks' machines")
PY

# The tables name the slowest rank of each merged result.
tables=$("$bin" show --wide "$out/report.json")
grep -q "slowest: rank [01] on " <<<"$tables" ||
    { echo "mpi-test: 'show' does not name the slowest rank:" >&2; echo "$tables" >&2; exit 1; }
echo "mpi-test: ok: the tables name the slowest rank"
