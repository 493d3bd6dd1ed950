#!/usr/bin/env bash
# Scale figures of the sim layer (issue 25): runs a fixed list of sim jobs from the
# release binaries, each under /usr/bin/time -v, and prints a Markdown table to stdout:
# the command, PEs, simulator events, events per second of the event loop, wall time
# of the whole process and its peak resident memory.
#
#   cargo build --release -p chorus-apps -p chorus-examples
#   scripts/scale-table.sh            # the full list (about 15 minutes on 2 cores)
#   scripts/scale-table.sh --quick    # smaller sizes, a smoke check (under a minute)
#
# Events and events/s are the simulator's figures from the run's JSON: the `--json`
# object (top level, `sim`, or the first strategy's `sim`), or for programs without
# those figures in `--json`, the runtime's `--stats json` object on stderr.
# Wall time and peak memory ("Maximum resident set size") come from /usr/bin/time -v.
# radix runs with --no-baseline so that each row is one simulation (by default it also
# sorts with the blocking baseline); its histogram allgather carries PEs^2 data
# (8.7 GB at 1024 PEs, 35 GB and 12 GiB peak memory at 2048; 4096 PEs exceeded the 23 GiB
# of the development machine), hence 1024 PEs. Progress goes to stderr; a run that fails is
# marked in its row and the script exits 1. BIN=dir picks another directory of binaries.
set -euo pipefail

quick=0
for arg in "$@"; do
    case "$arg" in
        --quick) quick=1 ;;
        -h | --help)
            sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "scale-table.sh: unknown argument '$arg' (only --quick)" >&2
            exit 2
            ;;
    esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${BIN:-$root/target/release}"

for tool in /usr/bin/time python3; do
    command -v "$tool" >/dev/null || {
        echo "scale-table.sh: needs $tool" >&2
        exit 1
    }
done
for b in chorus-bench mcmc sections jquick radix; do
    [[ -x "$bin/$b" ]] || {
        echo "scale-table.sh: no $bin/$b; run: cargo build --release -p chorus-apps -p chorus-examples" >&2
        exit 1
    }
done

# One run per line: the command (binary name first, then its arguments).
if ((quick)); then
    runs=(
        "chorus-bench sim-scale --pes 4096 --json"
        "chorus-bench sim-scale --pes 32768 --json"
        "mcmc --layer sim --pes 256 --lb collective:1 --json"
        "mcmc --layer sim --pes 256 --lb async --json"
        "sections --layer sim --pes 10000 --stats json"
        "jquick --layer sim --pes 512 --n-per-pe 100 --json"
        "radix --layer sim --pes 256 --keys-per-pe 1024 --sim-preset bgp --no-baseline --json"
        "chorus-bench replay --layer sim --pes 256 --seed 7 --json --stats json"
        "chorus-bench create-group --pes 512 --sim-preset bgp --json"
    )
else
    runs=(
        "chorus-bench sim-scale --pes 131072 --json"
        "chorus-bench sim-scale --pes 1048576 --json"
        "chorus-bench sim-scale --pes 10000000 --json"
        "mcmc --layer sim --pes 8192 --lb collective:1 --json"
        "mcmc --layer sim --pes 8192 --lb async --json"
        "sections --layer sim --pes 100000 --stats json"
        "jquick --layer sim --pes 8192 --n-per-pe 1000 --json"
        "radix --layer sim --pes 1024 --keys-per-pe 8192 --sim-preset bgp --no-baseline --json"
        "chorus-bench replay --layer sim --pes 4096 --seed 7 --json --stats json"
        "chorus-bench create-group --pes 8192 --sim-preset bgp --json"
    )
fi

# Under target/, away from anything that tidies /tmp.
tmp="$(mktemp -d "${root}/target/scale-table.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# Prints one table row from a run's stdout, stderr and /usr/bin/time -v report.
row() {
    python3 - "$@" <<'PY'
import json, re, sys

cmd, out_path, err_path, time_path, status = sys.argv[1:6]

def objects(path):
    """Every JSON object printed on a line of its own (or run together) in a file."""
    text = open(path, errors="replace").read()
    dec = json.JSONDecoder()
    found, i = [], 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return found
        try:
            obj, end = dec.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if isinstance(obj, dict):
            found.append(obj)
        i = end

def sim_figures(obj):
    """The object carrying the simulator's events and events_per_s, if any."""
    candidates = [obj, obj.get("sim")]
    for s in obj.get("strategies") or []:
        if isinstance(s, dict):
            candidates.append(s.get("sim"))
    for c in candidates:
        if isinstance(c, dict) and "events" in c and "events_per_s" in c:
            return c
    return None

sim = None
for path in (out_path, err_path):
    for obj in objects(path):
        sim = sim or sim_figures(obj)

timing = open(time_path, errors="replace").read()
m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", timing)
rss = f"{int(m.group(1)) / 1024:.0f}" if m else "?"
m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", timing)
wall = "?"
if m:
    secs = 0.0
    for part in m.group(1).split(":"):
        secs = secs * 60 + float(part)
    wall = f"{secs:.2f}"

m = re.search(r"--pes (\d+)", cmd)
pes = f"{int(m.group(1)):,}" if m else "?"
if sim:
    events = f"{sim['events']:,}"
    rate = f"{sim['events_per_s'] / 1e6:.2f} M"
else:
    events = rate = "n/a"
if status != "0":
    events = f"failed (exit {status})"
print(f"| `{cmd}` | {pes} | {events} | {rate} | {wall} | {rss} |")
PY
}

echo "| run | PEs | events | events/s | wall time (s) | peak memory (MiB) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
failed=0
n=0
for cmd in "${runs[@]}"; do
    n=$((n + 1))
    read -r -a argv <<<"$cmd"
    echo "scale-table.sh: [$n/${#runs[@]}] $cmd" >&2
    status=0
    /usr/bin/time -v -o "$tmp/time" "$bin/${argv[0]}" "${argv[@]:1}" \
        >"$tmp/out" 2>"$tmp/err" </dev/null || status=$?
    if ((status != 0)); then
        failed=1
        echo "scale-table.sh: '$cmd' exited with $status; its stderr:" >&2
        tail -n 20 "$tmp/err" >&2
    fi
    row "$cmd" "$tmp/out" "$tmp/err" "$tmp/time" "$status"
done
exit "$failed"
