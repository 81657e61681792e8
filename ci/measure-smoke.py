#!/usr/bin/env python3
"""Measures one smoke run of the harness (run it on an idle host): wall time, the harness's
peak RSS and CPU while it waits on the guest, and the lag from a guest milestone (a journal
entry, on the guest's clock corrected by the offset measured at each SSH status poll) to its
event in the timeline."""
import json, os, statistics, subprocess, sys, tempfile, time
from datetime import datetime

def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = os.path.join(root, "target/release/sno-harness")
out = tempfile.mkdtemp(prefix="sno-measure-")
tick = os.sysconf("SC_CLK_TCK")
start = time.time()
p = subprocess.Popen([binary, "run", os.path.join(root, "scenarios/smoke.toml"), "--out", out],
                     stderr=subprocess.DEVNULL)
samples, peak = [], 0
prev = None
while p.poll() is None:
    try:
        with open(f"/proc/{p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / tick
        with open(f"/proc/{p.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        now = time.time()
        if prev:
            samples.append((now - start, (cpu - prev[1]) / (now - prev[0])))
        prev = (now, cpu)
    except (FileNotFoundError, ProcessLookupError, IndexError):
        pass
    time.sleep(1)
wall = time.time() - start
run = os.path.join(out, "smoke")
result = json.load(open(os.path.join(run, "result.json")))
events = [json.loads(l) for l in open(os.path.join(run, "events.jsonl"))]
assets_end = next(ph["end_ms"] for ph in result["phases"] if ph["name"] == "assets") / 1000
waiting = [c for t, c in samples if t > assets_end + 2]
offsets = {}
for e in events:
    if e.get("kind") == "guest-status" and e.get("guest_time_ns"):
        offsets.setdefault(e["boot_id"].replace("-", ""), []).append(ts(e["time"]) - e["guest_time_ns"] / 1e9)
lags = []
for e in events:
    if e.get("kind") == "journal" and e.get("guest_usec"):
        off = offsets.get(e["boot_id"])
        if off:
            lags.append(ts(e["time"]) - (e["guest_usec"] / 1e6 + statistics.median(off)))
print(f"verdict: {result['verdict']} ({result['reason']})")
print(f"MEASURE smoke wall time: {wall:.1f} s (result.json duration {result['duration_ms'] / 1000:.1f} s)")
for ph in result["phases"]:
    print(f"  {ph['name']:<20} {(ph['duration_ms'] or 0) / 1000:6.1f} s")
if result.get("disk_write"):
    d = result["disk_write"]
    print(f"  disk write: {d['bytes'] / 2**20:.0f} MiB in {d['duration_ms'] / 1000:.1f} s = {d['mib_per_s']} MiB/s")
print(f"MEASURE harness peak RSS: {peak / 1024:.1f} MiB")
if waiting:
    print(f"MEASURE harness CPU while waiting: median {100 * statistics.median(waiting):.1f}% of a core, "
          f"mean {100 * statistics.mean(waiting):.1f}%, max {100 * max(waiting):.1f}% ({len(waiting)} one-second samples)")
if lags:
    lags.sort()
    print(f"MEASURE guest milestone to event lag: median {statistics.median(lags):.3f} s, "
          f"p90 {lags[int(0.9 * (len(lags) - 1))]:.3f} s over {len(lags)} journal entries")
print(f"run directory: {run}")
