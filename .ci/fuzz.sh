#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets (tests/fuzz/, clang with ASan and UBSan) in
# build-fuzz and runs each for a fixed time from its committed seed corpus, then prints
# executions and coverage (cov: edges, ft: features) per target.
#   .ci/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
# Targets: report baseline profile sizes devices topology_xml plugin_reply fleet. Inputs the fuzzer
# finds go to build-fuzz/corpus/TARGET (the committed corpus is only read). A crash leaves
# its input in build-fuzz/artifacts/TARGET/ and the script exits 1: fix the bug, then commit
# the input to tests/fuzz/corpus/TARGET/, where the test suite replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift $(( $# > 0 ? 1 : 0 ))
targets=${*:-report baseline profile sizes devices topology_xml plugin_reply fleet}
build=build-fuzz

CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DINTEROPBENCH_BUILD_FUZZERS=ON -DINTEROPBENCH_BUILD_TESTS=OFF -DINTEROPBENCH_WITH_MPI=OFF >/dev/null
cmake --build "$build" -j2 --target fuzzers >/dev/null

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/.ci/lsan.supp}
failed=0
printf '%-13s %-7s %12s %9s %9s %8s\n' target result executions cov ft corpus
for t in $targets; do
  work=$build/corpus/$t art=$build/artifacts/$t log=$build/fuzz_$t.log
  mkdir -p "$work" "$art"
  result=ok
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1 || { result=CRASH; failed=1; }
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
  printf '%-13s %-7s %12s %9s %9s %8s\n' "$t" "$result" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}"
  [[ $result == ok ]] || { grep -E 'ERROR|SUMMARY|Test unit written|fuzz invariant|what\(\)' "$log" | head -5 | sed 's/^/    /'; }
done
exit $failed
