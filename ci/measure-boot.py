#!/usr/bin/env python3
"""The boot variants side by side (run it on an idle host): scenarios/boot.toml as a matrix, one
run at a time, then each permutation's live-boot time, and for the minimal ISO its split into
fetching the root filesystem from the harness's server and the rest, with the fetch's
throughput, and install-to-disk and the reboot for each install mode (the assisted install
runs the harness's own coreos-installer). Numbers from result.json (the harness's own
timeline), not from this script's clock.

    python3 ci/measure-boot.py [OUT_DIR]   # target/release/sno-harness, or $SNO_HARNESS_BIN
    python3 ci/measure-boot.py --report OUT_DIR   # the table of runs already made
"""
import glob, json, os, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = os.environ.get("SNO_HARNESS_BIN", os.path.join(root, "target/release/sno-harness"))
args = sys.argv[1:]
report_only = args[:1] == ["--report"]
args = args[1:] if report_only else args
out = args[0] if args else tempfile.mkdtemp(prefix="sno-boot-")
if not report_only:
    subprocess.run([binary, "matrix", os.path.join(root, "scenarios/boot.toml"), "--jobs", "1",
                    "--out", out], check=False, stderr=subprocess.DEVNULL)
rows = []
for path in sorted(glob.glob(os.path.join(out, "**", "result.json"), recursive=True)):
    r = json.load(open(path))
    live = next((p for p in r["phases"] if p["name"] == "live-boot"), {})
    install = next((p for p in r["phases"] if p["name"] == "install-to-disk"), {})
    reboot = next((p for p in r["phases"] if p["name"] == "reboot"), {})
    boot = r.get("boot") or {}
    # The image itself: the largest GET (the init's probes before it are GETs cut short).
    gets = sorted((s for s in boot.get("served", []) if s["method"] == "GET"),
                  key=lambda s: -s["bytes"])
    rows.append((
        r["id"], r["verdict"], live.get("duration_ms"),
        boot.get("live_boot_fetch_ms"), boot.get("live_boot_rest_ms"),
        gets[0]["bytes"] if gets else None, gets[0].get("mib_per_s") if gets else None,
        install.get("duration_ms"), reboot.get("duration_ms"), r["duration_ms"],
    ))
fmt = "{:<34} {:<7} {:>12} {:>10} {:>10} {:>10} {:>9} {:>10} {:>9} {:>9}"
print(fmt.format("permutation", "verdict", "live-boot s", "fetch s", "rest s", "rootfs MiB",
                 "MiB/s", "install s", "reboot s", "run s"))
s = lambda ms: "-" if ms is None else f"{ms / 1000:.1f}"
for id_, verdict, live, fetch, rest, size, rate, install, reboot, total in rows:
    print(fmt.format(id_, verdict, s(live), s(fetch), s(rest),
                     "-" if size is None else f"{size / 1048576:.1f}",
                     "-" if rate is None else f"{rate:.1f}", s(install), s(reboot), s(total)))
print(f"results: {out}")
