#!/usr/bin/env python3
"""Runs each Charm++ benchmark beside its chorus port (chorus-bench charm-*),
alternating which goes first, REPS times, on the same PEs, and prints one table of
ratios (chorus / Charm++) of the medians. scripts/vs-charm.sh is the entry point;
see its header for the flags.

The ports print the originals' own result lines, so one parser reads both."""

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys

PINGPONG_SIZES = [8, 1024, 65536, 1048576]
KNEIGHBOR_SIZES = [64, 1024, 16384]
MIGRATE_SIZES = [1, 4096, 65536]
# The rows of the size sweeps (xcastredn, all-to-all) that go into the table.
XCAST_ROWS = {8, 1024, 65536}
ALLTOALL_ROWS = {32, 1024, 16384}
# LeanMD at its default box (3 x 3 x 3 cells, LB from step 20 every 20) but 101 of
# its 1001 steps, so a pair of runs takes minutes; both sides balance the computes
# with the same strategy (Charm++'s +balancer name, chorus's --array-lb name).
LEANMD_STEPS = 101
LEANMD_LB = ("GreedyLB", "greedy")


def pingpong(out):
    rows = {}
    size = re.search(r"Pingpong with payload: (\d+)", out)
    for what, us in re.findall(r"Roundtrip time for (1D Arrays|Groups) is ([\d.]+) us", out):
        rows[f"pingpong {what.split()[-1].lower()} {size.group(1)} B"] = float(us)
    return rows


def kneighbor(out):
    m = re.search(r"kNeighbor iteration with msg size (\d+) is ([\d.]+) \(us\)", out)
    return {f"kNeighbor {m.group(1)} B": float(m.group(2))} if m else {}


def xcastredn(out):
    rows, mech = {}, None
    for line in out.splitlines():
        m = re.search(r"collectives mechanism: ([\w-]+)\.", line)
        if m:
            mech = m.group(1)
            continue
        nums = line.split()
        if mech in ("Charm-Bcast", "Charm-Redn") and len(nums) == 5:
            try:
                size, avg = round(float(nums[0]) * 1024), float(nums[1])
            except ValueError:
                continue
            if size in XCAST_ROWS:
                rows[f"xcastredn {mech[6:].lower()} {size} B"] = avg * 1000.0
    return rows


def migrate(out):
    m = re.search(r"single migration cost: ([\d.]+) us", out)
    return {"migrate": float(m.group(1))} if m else {}


def alltoall(out):
    rows = {}
    for size, secs in re.findall(
        r"all-to-all of\s+(\d+) bytes.*\(not using TRAM\): ([\d.]+) seconds", out
    ):
        if int(size) in ALLTOALL_ROWS:
            rows[f"alltoall {size} B"] = float(secs) * 1e6
    return rows


def jacobi2d(out):
    m = re.search(r"Finish due to (?:max iterations|convergence, iterations) (\d+), total time ([\d.]+) seconds", out)
    return {"jacobi2d 1024 / 64, per iteration": float(m.group(2)) * 1e6 / int(m.group(1))} if m else {}


def leanmd(out):
    if "SIMULATION SUCCESSFULL" not in out:
        return {}
    m = re.search(r"Total application time ([\d.]+) s", out)
    label = f"leanmd 3x3x3 {LEANMD_LB[1]}, per step"
    return {label: float(m.group(1)) * 1e6 / LEANMD_STEPS} if m else {}


def cases(pes):
    """(label, chorus args, Charm++ binary, Charm++ args, parser) per pair."""
    out = []
    for b in PINGPONG_SIZES:
        it = 1000 if b <= 65536 else 200
        out.append((f"pingpong {b}", ["charm-pingpong", "--payload", str(b), "--iterations", str(it)],
                    "pingpong", [str(b), str(it)], pingpong))
    for b in KNEIGHBOR_SIZES:
        out.append((f"kNeighbor {b}", ["charm-kneighbor", "--elements", str(10 * pes), "--steps", "20",
                                       "--msg-size", str(b)],
                    "kNeighbor", [str(10 * pes), "20", str(b)], kneighbor))
    out.append(("xcastredn", ["charm-xcastredn", "--repeats", "10"], "testReduction",
                ["10", "8", "64"], xcastredn))
    for b in MIGRATE_SIZES:
        out.append((f"migrate {b}", ["charm-migrate", "--iterations", "10000", "--data-size", str(b)],
                    "migrateHello", ["10000", str(b)], lambda o, b=b: {f"migrate {b} B": v for v in migrate(o).values()}))
    out.append(("alltoall", ["charm-alltoall"], "ataTest", ["32", "16384"], alltoall))
    out.append(("jacobi2d", ["charm-jacobi2d", "--size", "1024", "--block", "64", "--max-iterations", "100"],
                "jacobi2d", ["1024", "64", "100"], jacobi2d))
    out.append(("leanmd", ["charm-leanmd", "--steps", str(LEANMD_STEPS), "--array-lb", LEANMD_LB[1]],
                "leanmd", ["3", "3", "3", str(LEANMD_STEPS), "20", "20", "+balancer", LEANMD_LB[0]], leanmd))
    return out


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    if p.returncode != 0:
        return None, (p.stdout + p.stderr)[-400:]
    return p.stdout, None


def commands(args, layer, chorus_args, charm_bin, charm_args):
    """The two command lines, and the Charm++ binary's path."""
    bench = args.chorus
    if layer == "threads":
        exe = os.path.join(args.charm_bin, "multicore-linux-x86_64", charm_bin)
        ours = [bench, *chorus_args, "--layer", "threads", "--pes", str(args.pes)]
        theirs = [exe, f"+p{args.pes}", *charm_args]
    else:
        exe = os.path.join(args.charm_bin, "mpi-linux-x86_64", charm_bin)
        mpirun = ["mpirun", "-n", str(args.pes), "--oversubscribe", "--bind-to", "none"]
        ours = [*mpirun, bench, *chorus_args, "--layer", "mpi"]
        theirs = [*mpirun, exe, *charm_args]
    return ours, theirs, exe


def measure(args, layer):
    """{row: ([chorus us...], [charm us...])} over the reps, alternating the order."""
    samples = {}
    for label, ours_args, charm_bin, charm_args, parse in cases(args.pes):
        if args.only and not any(label.startswith(o) for o in args.only):
            continue
        ours, theirs, exe = commands(args, layer, ours_args, charm_bin, charm_args)
        pair = [(0, ours), (1, theirs)]
        if not os.access(exe, os.X_OK):
            print(f"# {layer} {label}: no Charm++ binary {exe}", file=sys.stderr)
            if not args.chorus_only:
                continue
            pair = pair[:1]
        for rep in range(args.reps):
            for side, cmd in (pair if rep % 2 == 0 else pair[::-1]):
                out, err = run(cmd, args.timeout)
                if out is None:
                    print(f"# {layer} {label}: {' '.join(cmd)} failed: {err}", file=sys.stderr)
                    continue
                for row, v in parse(out).items():
                    samples.setdefault(row, ([], []))[side].append(v)
        print(f"# {layer} {label}: done", file=sys.stderr)
    return samples


def table(layer, samples):
    lines = [f"| {layer} row | chorus (us) | Charm++ (us) | time chorus/Charm++ | throughput chorus/Charm++ |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for row, (ours, theirs) in samples.items():
        if not ours or not theirs:
            lines.append(f"| {row} | {'n/a' if not ours else f'{statistics.median(ours):.2f}'} | "
                         f"{'n/a' if not theirs else f'{statistics.median(theirs):.2f}'} | - | - |")
            continue
        a, b = statistics.median(ours), statistics.median(theirs)
        lines.append(f"| {row} | {a:.2f} | {b:.2f} | {a / b:.2f} | {b / a:.2f} |")
    return "\n".join(lines)


def machine():
    model = "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, {platform.system()} {platform.release()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--charm-bin", default=os.environ.get("CHARM_BIN", "/work/charm-build/bin"),
                    help="bin/ of scripts/charm/build.sh's OUT (one folder per build)")
    ap.add_argument("--chorus", default="target/release/chorus-bench")
    ap.add_argument("--pes", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--layers", default="threads,mpi", help="threads (vs multicore), mpi (vs the mpi build)")
    ap.add_argument("--chorus-only", action="store_true",
                    help="run the chorus side where a Charm++ binary is missing (its column stays n/a)")
    ap.add_argument("--only", nargs="*", help="case labels to run (prefixes: pingpong, kNeighbor, ...)")
    args = ap.parse_args()
    print(f"machine: {machine()}; {args.pes} PEs; median of {args.reps} alternating reps\n")
    for layer in args.layers.split(","):
        if layer == "mpi" and not shutil.which("mpirun"):
            print("# mpi: no mpirun on PATH, skipped", file=sys.stderr)
            continue
        samples = measure(args, layer)
        if samples:
            print(table(layer, samples) + "\n")


if __name__ == "__main__":
    main()
