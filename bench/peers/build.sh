#!/usr/bin/env bash
# Builds the peer benchmarks into a build directory (default: build/peers under the repo root):
#   mpi-allreduce-bench-openmpi  mpi_allreduce_bench.c against Open MPI (mpicc.openmpi)
#   mpi-allreduce-bench-mpich    the same source against MPICH (mpicc.mpich)
#   gloo-allreduce-bench         gloo_allreduce_bench.cpp against Debian's libgloo
# Plain compiler commands: three files need no build system. The explicit .openmpi/.mpich
# wrappers matter because with both MPIs installed the unsuffixed mpicc is whichever
# update-alternatives chose. Install the compilers and libraries with install-deps.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/build/peers}
mkdir -p "$out"

cflags=(-O2 -std=c11 -Wall -Wextra)
echo "peers: building into $out"
mpicc.openmpi "${cflags[@]}" "$here/mpi_allreduce_bench.c" -o "$out/mpi-allreduce-bench-openmpi"
mpicc.mpich "${cflags[@]}" "$here/mpi_allreduce_bench.c" -o "$out/mpi-allreduce-bench-mpich"
# libgloo.so links hiredis and ibverbs itself; gloo's headers need only threads on our side.
"${CXX:-g++}" -O2 -std=c++20 -Wall -Wextra "$here/gloo_allreduce_bench.cpp" -o "$out/gloo-allreduce-bench" \
  -lgloo -pthread
echo "peers: built mpi-allreduce-bench-openmpi mpi-allreduce-bench-mpich gloo-allreduce-bench"
