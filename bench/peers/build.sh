#!/usr/bin/env bash
# Builds the peer benchmarks into a build directory (default: build/peers under the repo root):
#   mpi-allreduce-bench-openmpi  mpi_allreduce_bench.c against Open MPI (mpicc.openmpi)
#   mpi-allreduce-bench-mpich    the same source against MPICH (mpicc.mpich)
#   gloo-allreduce-bench         gloo_allreduce_bench.cpp against Debian's libgloo
# (the MPI program runs allreduce, allgather, reduce_scatter or broadcast: -C; Gloo's allreduce only).
# Plain compiler commands: three files need no build system. The explicit .openmpi/.mpich
# wrappers matter because with both MPIs installed the unsuffixed mpicc is whichever
# update-alternatives chose. Install the compilers and libraries with install-deps.sh.
# Open MPI is required; MPICH and Gloo are built where they are installed and otherwise skipped,
# saying so (bench/netns/run.sh needs only Open MPI, and Gloo for PEERS with gloo).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/build/peers}
mkdir -p "$out"

cflags=(-O2 -std=c11 -Wall -Wextra)
built=()
echo "peers: building into $out"
mpicc.openmpi "${cflags[@]}" "$here/mpi_allreduce_bench.c" -o "$out/mpi-allreduce-bench-openmpi"
built+=(mpi-allreduce-bench-openmpi)
if command -v mpicc.mpich >/dev/null; then
  mpicc.mpich "${cflags[@]}" "$here/mpi_allreduce_bench.c" -o "$out/mpi-allreduce-bench-mpich"
  built+=(mpi-allreduce-bench-mpich)
else
  echo "peers: skipped mpi-allreduce-bench-mpich: no mpicc.mpich (install-deps.sh installs MPICH)" >&2
fi
# libgloo.so links hiredis and ibverbs itself; gloo's headers need only threads on our side.
if echo '#include <gloo/allreduce.h>' | "${CXX:-g++}" -std=c++20 -E -x c++ - >/dev/null 2>&1; then
  "${CXX:-g++}" -O2 -std=c++20 -Wall -Wextra "$here/gloo_allreduce_bench.cpp" -o "$out/gloo-allreduce-bench" \
    -lgloo -pthread
  built+=(gloo-allreduce-bench)
else
  echo "peers: skipped gloo-allreduce-bench: no gloo headers (install-deps.sh installs libgloo-dev)" >&2
fi
echo "peers: built ${built[*]}"
