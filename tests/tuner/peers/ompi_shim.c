//! @file ompi_shim.c  LD_PRELOAD shim: names each ompi_coll_base_* algorithm Open MPI calls on rank 0 (check_ompi.sh).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int (*fn8)(void*, void*, void*, void*, void*, void*, void*, void*);
static int logging(void) {
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  return r && strcmp(r, "0") == 0;
}
#define HOOK(name)                                                                   \
  int name(void* a, void* b, void* c, void* d, void* e, void* f, void* g, void* h) { \
    static fn8 real;                                                                 \
    if (!real) real = (fn8)dlsym(RTLD_NEXT, #name);                                  \
    if (logging()) fprintf(stderr, "HOOK %s\n", #name);                              \
    return real(a, b, c, d, e, f, g, h);                                             \
  }
HOOK(ompi_coll_base_allreduce_intra_basic_linear)
HOOK(ompi_coll_base_allreduce_intra_nonoverlapping)
HOOK(ompi_coll_base_allreduce_intra_recursivedoubling)
HOOK(ompi_coll_base_allreduce_intra_redscat_allgather)
HOOK(ompi_coll_base_allreduce_intra_ring)
HOOK(ompi_coll_base_allreduce_intra_ring_segmented)
HOOK(ompi_coll_base_bcast_intra_binomial)
HOOK(ompi_coll_base_bcast_intra_split_bintree)
HOOK(ompi_coll_base_bcast_intra_bintree)
HOOK(ompi_coll_base_bcast_intra_pipeline)
HOOK(ompi_coll_base_bcast_intra_chain)
HOOK(ompi_coll_base_bcast_intra_knomial)
HOOK(ompi_coll_base_bcast_intra_scatter_allgather)
HOOK(ompi_coll_base_bcast_intra_scatter_allgather_ring)
HOOK(ompi_coll_base_bcast_intra_basic_linear)
HOOK(ompi_coll_base_alltoall_intra_pairwise)
HOOK(ompi_coll_base_alltoall_intra_bruck)
HOOK(ompi_coll_base_alltoall_intra_linear_sync)
HOOK(ompi_coll_base_alltoall_intra_basic_linear)
HOOK(ompi_coll_base_barrier_intra_tree)
HOOK(ompi_coll_base_barrier_intra_bruck)
HOOK(ompi_coll_base_barrier_intra_doublering)
HOOK(ompi_coll_base_barrier_intra_recursivedoubling)
HOOK(ompi_coll_base_barrier_intra_basic_linear)
HOOK(ompi_coll_base_reduce_scatter_intra_ring)
HOOK(ompi_coll_base_reduce_scatter_intra_basic_recursivehalving)
HOOK(ompi_coll_base_reduce_scatter_intra_nonoverlapping)
HOOK(ompi_coll_base_reduce_scatter_intra_butterfly)
HOOK(ompi_coll_base_allgather_intra_ring)
HOOK(ompi_coll_base_allgather_intra_recursivedoubling)
HOOK(ompi_coll_base_allgather_intra_bruck)
HOOK(ompi_coll_base_allgather_intra_neighborexchange)
HOOK(ompi_coll_base_allgather_intra_two_procs)
HOOK(ompi_coll_base_allgather_intra_basic_linear)
