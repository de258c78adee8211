//! @file ompi_probe.c  One call of each collective at sizes either side of the exported boundaries (check_ompi.sh).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int rank;
static void mark(const char* what, long bytes) {
  if (rank == 0) { fprintf(stderr, "PROBE %s %ld\n", what, bytes); fflush(stderr); }
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  char* in = calloc(1 << 22, 1);
  char* out = calloc(1 << 22, 1);
  long ar[] = {1024, 2044, 2048, 65532, 65536, 1 << 20};
  for (int i = 0; i < 6; ++i) { mark("allreduce", ar[i]); MPI_Allreduce(in, out, ar[i] / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }
  long bc[] = {65532, 65536};
  for (int i = 0; i < 2; ++i) { mark("bcast", bc[i]); MPI_Bcast(in, bc[i] / 4, MPI_FLOAT, 0, MPI_COMM_WORLD); }
  long a2a_block[] = {512, 516};  /* bytes per block: message size = n * block */
  for (int i = 0; i < 2; ++i) { mark("alltoall", a2a_block[i] * n); MPI_Alltoall(in, a2a_block[i] / 4, MPI_FLOAT, out, a2a_block[i] / 4, MPI_FLOAT, MPI_COMM_WORLD); }
  mark("barrier", 0); MPI_Barrier(MPI_COMM_WORLD);
  long rsb[] = {1016, 1020};  /* per rank */
  for (int i = 0; i < 2; ++i) {
    int counts[64]; for (int k = 0; k < n; ++k) counts[k] = rsb[i] / 4;
    mark("reduce_scatter", rsb[i] * n); MPI_Reduce_scatter(in, out, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  mark("allgather", 4096L * n); MPI_Allgather(in, 1024, MPI_FLOAT, out, 1024, MPI_FLOAT, MPI_COMM_WORLD);
  mark("end", 0);
  MPI_Finalize();
  return 0;
}
