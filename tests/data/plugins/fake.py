#!/usr/bin/env python3
"""A fake interopbench plugin for the tests: argv[1] names how it behaves.

good            answers every request
slow_start      sleeps a second before reading its input
skip            prepare answers skip
prepare_error   prepare answers error
crash           dies (SIGKILL of itself) at the third measure
hang            stops answering at the third measure
blank           prints blank lines forever at the third measure
garbage         answers the third measure with a line that is not JSON
child           starts a child at prepare and leaves it running after teardown
session_child   the same, the child in a session of its own (setsid)
session_hang    starts a child in a session of its own at prepare, hangs at the third measure
refork          starts a child at prepare that forks anew and exits, over and over (a new PID
                each time, each in a session of its own)
kill_warden     at the third measure a child kills the plugin's warden, keeps the plugin's
                stdout open and sleeps
check_fail      check answers error
describe_hang   never answers describe
describe_crash  exits before reading anything
describe_garbage answers describe with text
wrong_version   answers describe with protocol 2
comma_choice    describes a choice that holds a comma
deep_details    answers details nested 254 levels deep (as deep as a reply may nest them)
nan             answers the third measure with NaN values (json.dumps writes them; JSON has none)

FAKE_PLUGIN_PIDFILE, when set, names a file that gets one line per process started
("PID STARTTIME", the start time of /proc/PID/stat), so the tests can check that none
outlives interopbench, never mistaking a later process that got the same pid for it.
"""
import json
import os
import signal
import subprocess
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "good"


def start_time(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2:].split()[19]  # field 22: starttime
    except (OSError, ValueError, IndexError):
        return "0"


def note_pid(pid):
    path = os.environ.get("FAKE_PLUGIN_PIDFILE")
    if path:
        with open(path, "a") as f:
            f.write(f"{pid} {start_time(pid)}\n")


note_pid(os.getpid())
if mode == "slow_start":
    time.sleep(1.0)
if mode == "describe_crash":
    sys.exit(3)


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def refork():
    while True:
        if os.fork() > 0:
            os._exit(0)
        os.setsid()
        note_pid(os.getpid())


size = 0
measured = 0
child = None
for line in sys.stdin:
    msg = json.loads(line)
    op = msg.get("op")
    print(f"{mode}: {op}", file=sys.stderr, flush=True)
    if op == "describe":
        if mode == "describe_hang":
            time.sleep(3600)
        if mode == "describe_garbage":
            print("hello, this is not JSON", flush=True)
            continue
        reply({
            "protocol": 2 if mode == "wrong_version" else 1,
            "summary": f"fake plugin ({mode})",
            "counting": "size bytes once per operation",
            "axes": [
                {"name": "size", "kind": "size", "values": ["4K", "1M"], "help": "bytes per operation"},
                {"name": "variant", "kind": "choice", "values": ["a"],
                 "choices": ["a", "b,c" if mode == "comma_choice" else "b"], "help": "a or b"},
            ],
            "metrics": [
                {"name": "time", "unit": "s", "better": "lower", "help": "time per operation"},
                {"name": "bandwidth", "unit": "B/s", "better": "higher", "help": "size / time"},
            ],
        })
    elif op == "prepare":
        size = msg["params"]["size"]
        measured = 0
        if mode == "skip":
            reply({"skip": "fake: this configuration is not for this machine"})
        elif mode == "prepare_error":
            reply({"error": "fake: could not allocate"})
        else:
            if mode == "child":
                child = subprocess.Popen(["sleep", "300"])
                note_pid(child.pid)
            if mode in ("session_child", "session_hang"):
                child = subprocess.Popen(["sleep", "300"], start_new_session=True)
                note_pid(child.pid)
            if mode == "refork" and os.fork() == 0:
                refork()
            reply({})
    elif op == "measure":
        measured += 1
        if measured == 3 and mode == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        if measured == 3 and mode in ("hang", "session_hang"):
            time.sleep(3600)
        if measured == 3 and mode == "kill_warden":
            warden = os.getppid()
            if os.fork() == 0:
                note_pid(os.getpid())
                os.kill(warden, signal.SIGKILL)
                time.sleep(300)
                os._exit(0)
            time.sleep(300)  # ended with the warden
        if measured == 3 and mode == "blank":
            while True:
                print("", flush=True)
                time.sleep(0.001)
        if measured == 3 and mode == "nan":
            reply({"values": {"time": float("nan"), "bandwidth": float("inf")}, "clock": "fake"})
            continue
        if measured == 3 and mode == "garbage":
            print("{this is not JSON", flush=True)
            continue
        t = 1e-3 * (1 + 0.001 * (measured % 3))
        reply({"values": {"time": t, "bandwidth": size / t}, "clock": "fake", "elapsed_s": t / 2})
    elif op == "check":
        reply({"error": "fake: the data differ"} if mode == "check_fail" else {})
    elif op == "details":
        if mode == "deep_details":
            deep = "bottom"
            for _ in range(253):
                deep = {"in": deep}
            reply({"details": {"mode": mode, "size": size, "deep": deep}})
        else:
            reply({"details": {"mode": mode, "size": size, "variant_seen": True}})
    elif op == "teardown":
        reply({})  # in child mode the child keeps running: interopbench must notice
    else:
        reply({"error": f"unknown op {op}"})
