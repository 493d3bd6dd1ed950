#!/usr/bin/env bash
# Runs Charm++'s benchmarks beside their chorus ports and prints one table of ratios
# (chorus / Charm++; medians of alternating repetitions on the same PEs):
# chorus's threads layer against Charm++'s multicore build, and chorus's mpi layer
# under mpirun against Charm++'s mpi build under the same mpirun.
#
#   scripts/charm/build.sh /path/to/charm /work/charm-build     # once, by hand
#   cargo build --release -p chorus-apps --bin chorus-bench --features mpi
#   scripts/vs-charm.sh [--reps 5] [--pes 2] [--layers threads,mpi] [--only pingpong ...]
#
# CHARM_BIN (or --charm-bin) is build.sh's OUT/bin. Never run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/charm/vs_charm.py "$@"
