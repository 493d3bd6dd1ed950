#!/usr/bin/env bash
# Builds Charm++ (multicore-linux-x86_64 and mpi-linux-x86_64 with mpicxx, -O3)
# from a source tree, then the benchmarks, the Jacobi2D example and, given its
# tree, the LeanMD mini-app that scripts/vs-charm.sh runs beside their chorus ports.
#
#   [LEANMD=DIR] scripts/charm/build.sh SRC [OUT]
#
# SRC is a charmplusplus/charm source tree; OUT (default ./charm-build) receives
# one directory per build and a bin/<build>/ folder with the benchmark binaries.
# LEANMD is a charmplusplus/leanmd tree (its own repository, not in SRC): built
# against each build with its Makefile (CkMulticast and CommonLBs linked in, -O3).
# BUILDS="multicore-linux-x86_64 mpi-linux-x86_64" picks the builds; JOBS=2 the
# make parallelism. Needs a C++ compiler, make and, for mpi, OpenMPI's mpicxx.
# Never run in CI: it builds from a local tree and takes tens of minutes.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 SRC [OUT]" >&2
  exit 2
fi
SRC=$(cd "$1" && pwd)
OUT=$(mkdir -p "${2:-charm-build}" && cd "${2:-charm-build}" && pwd)
JOBS=${JOBS:-2}
BUILDS=${BUILDS:-"multicore-linux-x86_64 mpi-linux-x86_64"}

if [[ ! -x "$SRC/build" ]]; then
  echo "$SRC is not a Charm++ source tree (no ./build)" >&2
  exit 2
fi

# The benchmarks each build with `make` in their folder against charmc; the
# bandwidth one lives in pingpong/zerocopy's neighbour when the tree has it.
BENCHES=(
  benchmarks/charm++/pingpong
  benchmarks/charm++/kNeighbor
  benchmarks/charm++/xcastredn
  benchmarks/charm++/migrate
  benchmarks/charm++/streamingAllToAll
  examples/charm++/jacobi2d-2d-decomposition
)

# The make-based buildold is used (no cmake needed); its Makefiles reach the
# tree's cmake/ folder by a relative path, so each build lives at SRC/<build>
# and OUT/<build> links to it.
# buildold names the tree after its options: mpi-linux-x86_64 built with mpicxx
# lands in SRC/mpi-linux-x86_64-mpicxx.
tree_of() {
  if [[ $1 == mpi-* ]]; then echo "$SRC/$1-mpicxx"; else echo "$SRC/$1"; fi
}

build_charm() {
  local target=$1 extra=() tree
  tree=$(tree_of "$target")
  [[ $target == mpi-* ]] && extra=(mpicxx)
  if [[ -x "$tree/bin/charmc" && -f "$tree/lib/libck.a" ]]; then
    echo "== $target: already built in $tree"
  else
    echo "== building Charm++ $target in $tree"
    (cd "$SRC" && ./buildold charm++ "$target" "${extra[@]}" --with-production -j"$JOBS" -O3)
  fi
  ln -sfn "$tree" "$OUT/$target"
}

# Each benchmark is built in a copy of its folder under OUT/work/<build>, laid out
# as in the source tree beside links to the build's bin, include and lib, so the
# Makefiles' relative paths (../../../bin/charmc, ../../common.mk) hold unchanged.
build_benches() {
  local target=$1 dest="$OUT/bin/$1" work="$OUT/work/$1"
  mkdir -p "$dest" "$work/benchmarks" "$work/examples"
  for d in bin include lib; do ln -sfn "$(tree_of "$target")/$d" "$work/$d"; done
  for top in benchmarks examples; do
    [[ -f "$SRC/$top/common.mk" ]] && cp "$SRC/$top/common.mk" "$work/$top/"
  done
  for b in "${BENCHES[@]}"; do
    [[ -d "$SRC/$b" ]] || { echo "== $b: not in this tree, skipped"; continue; }
    echo "== $target: $b"
    rm -rf "${work:?}/$b"
    mkdir -p "$(dirname "$work/$b")"
    cp -r "$SRC/$b" "$work/$b"
    make -C "$work/$b" -j"$JOBS" OPTS="-O3" >"$work/$b.log" 2>&1 ||
      { echo "   failed: see $work/$b.log"; continue; }
    find "$work/$b" -maxdepth 1 -type f -perm -u+x ! -name '*.sh' ! -name charmrun \
      -exec cp {} "$dest/" \;
  done
}

# LeanMD's Makefile names its Charm++ build by CHARMBASE, so it is built in a
# copy of its tree under OUT/work/<build>/leanmd with CHARMBASE set on the line.
build_leanmd() {
  local target=$1 dest="$OUT/bin/$1" work="$OUT/work/$1/leanmd"
  [[ -n ${LEANMD:-} ]] || { echo "== leanmd: LEANMD not set, skipped"; return; }
  [[ -f "$LEANMD/leanmd.ci" ]] || { echo "== $LEANMD is not a LeanMD tree (no leanmd.ci)" >&2; exit 2; }
  echo "== $target: leanmd"
  rm -rf "$work"
  mkdir -p "$(dirname "$work")" "$dest"
  cp -r "$LEANMD" "$work"
  make -C "$work" clean >/dev/null 2>&1 || true
  make -C "$work" CHARMBASE="$SRC/$target" OPTS="-O3" leanmd >"$work.log" 2>&1 ||
    { echo "   failed: see $work.log"; return; }
  cp "$work/leanmd" "$dest/"
}

for t in $BUILDS; do
  build_charm "$t"
  build_benches "$t"
  build_leanmd "$t"
done
echo "== done: binaries in $OUT/bin/<build>/"
