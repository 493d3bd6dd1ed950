#!/usr/bin/env bash
# JQuick on range sections against JQuick with a modelled MPICH MPI_Comm_split per
# level (issue 25), or with --create-group a modelled MPI_Comm_create_group per child
# (Dinan et al.), on the simulator with the Blue Gene/P preset: one
# `jquick --compare <model>` per n/p, and a Markdown table on stdout (n/p, both
# virtual times, the speedup, levels, sections, wall time of the pair of runs).
#
#   cargo build --release -p chorus-apps
#   scripts/split-model-table.sh             # 32,768 PEs, n/p = 1 16 256 4096 (about 15 min)
#   scripts/split-model-table.sh --quick     # 4,096 PEs, n/p = 1 64 1024 (under a minute)
#   scripts/split-model-table.sh --ring      # MPICH's ring where MPICH takes it (jquick
#                                            # --split-ring): about two hours per n/p at 32,768 PEs
#   scripts/split-model-table.sh --create-group  # against MPI_Comm_create_group instead
#                                            # (Dinan et al.; --native-create-group: MPICH's)
#
# PES=... and NPP="1 16 ..." override the PEs and the n/p list. Progress goes to stderr;
# a run that fails or does not verify stops the script with exit 1.
set -euo pipefail

pes="${PES:-32768}"
npp="${NPP:-1 16 256 4096}"
ring=()
model=split-model
call=MPI_Comm_split
for arg in "$@"; do
    case "$arg" in
        --ring) ring=(--split-ring) ;;
        --create-group)
            model=create-group-model
            call="MPI_Comm_create_group (Dinan et al.)"
            ;;
        --native-create-group)
            model=native-create-group-model
            call="MPI_Comm_create_group (MPICH)"
            ;;
        --quick)
            pes="${PES:-4096}"
            npp="${NPP:-1 64 1024}"
            ;;
        -h | --help)
            sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "split-model-table.sh: unknown argument '$arg' (only --quick, --ring, --create-group and --native-create-group)" >&2
            exit 2
            ;;
    esac
done

if [[ ${#ring[@]} -gt 0 && "$model" != split-model ]]; then
    echo "split-model-table.sh: --ring is MPI_Comm_split's allgather: leave it out with --create-group and --native-create-group" >&2
    exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${BIN:-$root/target/release}/jquick"
[[ -x "$bin" ]] || {
    echo "split-model-table.sh: no $bin; run: cargo build --release -p chorus-apps" >&2
    exit 1
}

echo "| n/p | PEs | range (ms) | modelled $call (ms) | speedup | levels | sections | wall (s) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in $npp; do
    echo "split-model-table.sh: $pes PEs, n/p = $n" >&2
    start=$(date +%s.%N)
    json=$("$bin" --layer sim --pes "$pes" --sim-preset bgp --n-per-pe "$n" \
        --compare "$model" "${ring[@]}" --reps 1 --verify --json)
    end=$(date +%s.%N)
    python3 - "$n" "$start" "$end" "$json" "${model//-/_}" <<'PY'
import json, sys
n, start, end, d = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
m = sys.argv[5]
assert d["sorted"] and d["balanced"] and d["permutation"], d
print(f"| {int(n):,} | {d['pes']:,} | {d['time_s'] * 1e3:.2f} | {d[m + '_time_s'] * 1e3:.2f} "
      f"| {d['speedup_vs_' + m]:.1f}x | {d['levels']} | {d['sections_created']:,} | {end - start:.0f} |")
PY
done
