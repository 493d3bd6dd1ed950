#!/usr/bin/env bash
# Install an MPI for chorus's `mpi` feature, plus libclang (rsmpi generates its
# bindings with bindgen). Debian/Ubuntu only. Usage:
#   scripts/install-mpi.sh            # OpenMPI (default)
#   scripts/install-mpi.sh --mpich    # MPICH instead
set -euo pipefail

flavour=openmpi
case "${1:-}" in
  "" | --openmpi) flavour=openmpi ;;
  --mpich) flavour=mpich ;;
  *) echo "usage: $0 [--openmpi|--mpich]" >&2; exit 2 ;;
esac

# bindgen needs libclang itself (libclang.so / libclang-N.so), not libclang-cpp.
if command -v mpicc >/dev/null 2>&1 \
  && ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*/libclang-[0-9]*.so* >/dev/null 2>&1; then
  echo "install-mpi: $(mpicc --showme:version 2>/dev/null || mpicc -v 2>&1 | head -1) and libclang already present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
if [ "$flavour" = openmpi ]; then
  $sudo apt-get install -y -qq --no-install-recommends libopenmpi-dev openmpi-bin libclang-dev clang pkg-config
else
  $sudo apt-get install -y -qq --no-install-recommends libmpich-dev mpich libclang-dev clang pkg-config
fi
echo "install-mpi: installed $flavour: $(command -v mpirun)"
