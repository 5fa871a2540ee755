#!/usr/bin/env python3
"""null: an interopbench plugin that measures nothing, for the protocol's own cost.

Each measure request spins for `work` (0, 1 ms or 10 ms) on the host clock and says so in
elapsed_s; interopbench times the whole request, so details.plugin.overhead_median_s is
what one sample costs beyond the plugin's own work (JSON, pipes, two context switches),
and overhead_fraction that cost relative to the work.
"""
import json
import sys
import time

WORK = {"0": 0.0, "1ms": 1e-3, "10ms": 1e-2}


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


work = 0.0
for line in sys.stdin:
    request = json.loads(line)
    op = request["op"]
    if op == "describe":
        answer = {
            "protocol": 1,
            "summary": "measures nothing: the protocol's overhead per sample",
            "counting": "nothing is moved",
            "axes": [{"name": "work", "kind": "choice", "values": ["0", "10ms"],
                      "choices": list(WORK), "help": "host time spent inside each sample"}],
            "metrics": [{"name": "sample_time", "unit": "s", "better": "lower",
                         "help": "time spent inside the plugin per sample, its own clock"}],
        }
    elif op == "prepare":
        work = WORK[request["params"]["work"]]
        answer = {}
    elif op == "measure":
        t0 = time.perf_counter()
        spin(work)
        t = time.perf_counter() - t0
        answer = {"values": {"sample_time": t}, "clock": "host_perf_counter", "elapsed_s": t}
    elif op == "details":
        answer = {"details": {"work_s": work}}
    else:  # check, teardown
        answer = {}
    print(json.dumps(answer), flush=True)
