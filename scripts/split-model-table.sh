#!/usr/bin/env bash
# JQuick on range sections against JQuick with a modelled MPICH MPI_Comm_split per
# level (issue 25), on the simulator with the Blue Gene/P preset: one
# `jquick --compare split-model` per n/p, and a Markdown table on stdout (n/p, both
# virtual times, the speedup, levels, sections, wall time of the pair of runs).
#
#   cargo build --release -p chorus-apps
#   scripts/split-model-table.sh             # 32,768 PEs, n/p = 1 16 256 4096 (about 15 min)
#   scripts/split-model-table.sh --quick     # 4,096 PEs, n/p = 1 64 1024 (under a minute)
#   scripts/split-model-table.sh --ring      # MPICH's ring where MPICH takes it (jquick
#                                            # --split-ring): about an hour per n/p at 32,768 PEs
#
# PES=... and NPP="1 16 ..." override the PEs and the n/p list. Progress goes to stderr;
# a run that fails or does not verify stops the script with exit 1.
set -euo pipefail

pes="${PES:-32768}"
npp="${NPP:-1 16 256 4096}"
ring=()
for arg in "$@"; do
    case "$arg" in
        --ring) ring=(--split-ring) ;;
        --quick)
            pes="${PES:-4096}"
            npp="${NPP:-1 64 1024}"
            ;;
        -h | --help)
            sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "split-model-table.sh: unknown argument '$arg' (only --quick and --ring)" >&2
            exit 2
            ;;
    esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${BIN:-$root/target/release}/jquick"
[[ -x "$bin" ]] || {
    echo "split-model-table.sh: no $bin; run: cargo build --release -p chorus-apps" >&2
    exit 1
}

echo "| n/p | PEs | range (ms) | modelled MPI_Comm_split (ms) | speedup | levels | sections | wall (s) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in $npp; do
    echo "split-model-table.sh: $pes PEs, n/p = $n" >&2
    start=$(date +%s.%N)
    json=$("$bin" --layer sim --pes "$pes" --sim-preset bgp --n-per-pe "$n" \
        --compare split-model "${ring[@]}" --reps 1 --verify --json)
    end=$(date +%s.%N)
    python3 - "$n" "$start" "$end" "$json" <<'PY'
import json, sys
n, start, end, d = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
assert d["sorted"] and d["balanced"] and d["permutation"], d
print(f"| {int(n):,} | {d['pes']:,} | {d['time_s'] * 1e3:.2f} | {d['split_model_time_s'] * 1e3:.2f} "
      f"| {d['speedup_vs_split_model']:.1f}x | {d['levels']} | {d['sections_created']:,} | {end - start:.0f} |")
PY
done
