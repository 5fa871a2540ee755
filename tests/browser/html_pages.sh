#!/usr/bin/env bash
# Browser test of the HTML pages: Debian's chromium, headless, loads the pages of committed
# reference reports (a multi-GPU default job, the peer matrices, a pipeline, the framework
# handoffs), of a report with hostile strings and skipped, failed and missing figures, of two
# comparisons and of a fleet. Each page is loaded in a 1400 x 900 window (its DOM after load is
# checked by check_dom.py for console messages, script elements besides the embedded report,
# event handlers and fewer charts than families; OUT/NAME.png) and shot again 800 px wide
# (OUT/NAME-800.png). Then one layout page holds every page in frames 1400 and 800 px wide and
# measures them in the browser (measure.js): check_dom.py --layout fails on a page wider than
# its window, text over other text (headers, labels, legends) and a legend of more than 12
# entries. Skips (exit 77) without chromium, unless CI=true.
# usage: html_pages.sh INTEROPBENCH SOURCE_DIR OUT_DIR
set -euo pipefail
bin=$1 src=$(realpath "$2") out=$(realpath -m "$3") # file:// needs absolute paths
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "error: chromium is not installed, and CI=true needs the browser test (.ci/install-deps.sh installs it)" >&2
    exit 1
  fi
  echo "skipped: chromium is not installed (apt-get install chromium); the browser test did not run"
  exit 77
fi
rm -rf "$out" && mkdir -p "$out"
families() { python3 -c 'import json,sys; print(len({r.get("family", r["scenario"]) for r in json.load(open(sys.argv[1]))["results"]}))' "$1"; }
# Locally a representative set (every kind of page and chart, the hostile report) keeps the
# test short; CI=true or INTEROPBENCH_BROWSER_ALL=1 also loads the page of every other committed
# reference report (about 2 s each, 1400 px only; all are measured at both widths),
# INTEROPBENCH_BROWSER_ALL=0 the representative set even with CI=true. The string-level checks
# of every page are in test_html.cpp.
all=${INTEROPBENCH_BROWSER_ALL:-}
shown=(h200x2-default-job h200x2-peer h200x1-pipeline-ad09f1b h200x1-frameworks)
inputs=()
for n in "${shown[@]}"; do inputs+=("$src/reports/$n.json"); done
if [ "$all" = 1 ] || { [ "${CI:-}" = "true" ] && [ "$all" != 0 ]; }; then
  for f in "$src"/reports/*.json; do
    case " ${shown[*]} report.schema " in *" $(basename "$f" .json) "*) ;; *) inputs+=("$f") ;; esac
  done
fi
narrow=" ${shown[*]} hostile compare compare-family-move fleet " # also shot 800 px wide
for f in "${inputs[@]}" "$src"/tests/data/html/hostile.json; do
  name=$(basename "$f" .json)
  "$bin" show --format html "$f" > "$out/$name.html"
  echo "$name $(families "$f")" >> "$out/pages.txt"
done
"$bin" compare --format html --out "$out/compare.html" "$src/reports/h200x2-ci-1.json" "$src/reports/h200x2-ci-2.json" > /dev/null || true
echo "compare 2" >> "$out/pages.txt"
"$bin" compare --format html --out "$out/compare-family-move.html" "$src/reports/h200x1-family-move/quick-before.json" \
  "$src/reports/h200x1-family-move/quick-after.json" > /dev/null || true
echo "compare-family-move 2" >> "$out/pages.txt"
# A fleet of the 1-GPU H200 reports: 13 machines, results of every family, two outliers.
"$bin" fleet --format html --out "$out/fleet.html" "$src"/reports/h200x1-*.json "$src"/reports/h200x1-family-move/*.json \
  "$src"/reports/h200x1-loading-ddcc869/{default,pipeline,storage}.json > /dev/null || true
echo "fleet 0" >> "$out/pages.txt"
# One fresh headless browser per launch: the DOM after load (scripts, had any run, included),
# the console on stderr, and a screenshot. A launch has 120 s times
# INTEROPBENCH_TEST_TIME_FACTOR (a guard against a browser that never exits, not a timing
# check): past it the browser is killed and the page fails.
limit=$(awk -v f="${INTEROPBENCH_TEST_TIME_FACTOR:-1}" 'BEGIN { if (f + 0 < 1 || f + 0 > 100) exit 1; printf "%d", 120 * f }') ||
  { echo "error: INTEROPBENCH_TEST_TIME_FACTOR=${INTEROPBENCH_TEST_TIME_FACTOR} is not a number from 1 to 100" >&2; exit 2; }
launch() { # PROFILE WIDTH SCREENSHOT URL [chromium options...]: the dumped DOM on stdout, the console in $out/PROFILE.log
  local profile=$1 width=$2 shot=$3 url=$4 rc=0
  shift 4
  timeout --kill-after=10 "$limit" "$browser" --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
    --hide-scrollbars --enable-logging=stderr --v=0 --user-data-dir="$out/profile-$profile" --window-size="$width",900 \
    --screenshot="$shot" "$@" --dump-dom "$url" 2> "$out/$profile.log" || rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "$profile: the browser did not finish within $limit s (killed)" >&2; return 1; fi
  [ -s "$shot" ] || { echo "$profile: no screenshot" >&2; return 1; }
}
load() { # NAME MIN_CHARTS
  launch "$1" 1400 "$out/$1.png" "file://$out/$1.html" > "$out/$1.dom" || return 1
  python3 "$src/tests/browser/check_dom.py" "$out/$1.dom" "$out/$1.log" "$2" || return 1
  case "$narrow" in *" $1 "*) launch "$1-800" 800 "$out/$1-800.png" "file://$out/$1.html" > /dev/null ;; esac
}
fail=0
# One after another: two browsers at once on two cores were slower than in turn.
while read -r name n; do load "$name" "$n" || fail=1; done < "$out/pages.txt"
# The layout of every page in a real window of each width, measured in one launch.
{
  echo '<!DOCTYPE html><html><head><meta charset="utf-8"><title>layout</title></head><body>'
  while read -r name n; do
    for w in 1400 800; do echo "<iframe data-page=\"$name\" src=\"$name.html\" style=\"width:${w}px;height:900px;border:0\"></iframe>"; done
  done < "$out/pages.txt"
  echo "<pre id=\"out\"></pre><script src=\"file://$src/tests/browser/measure.js\"></script></body></html>"
} > "$out/layout.html"
launch layout 1400 "$out/layout.png" "file://$out/layout.html" --allow-file-access-from-files > "$out/layout.dom" || fail=1
python3 "$src/tests/browser/check_dom.py" --layout "$out/layout.dom" $(( $(wc -l < "$out/pages.txt") * 2 )) || fail=1
[ "$fail" = 0 ] && echo "browser test: $(wc -l < "$out/pages.txt") pages loaded and checked; screenshots in $out"
exit "$fail"
