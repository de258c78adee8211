/* @file mpi_allreduce_bench.c  The nccl-tests sweep of allreduce, allgather, reduce_scatter or
 * broadcast (-C) through plain MPI: the peer tutti is measured against (method: PEERS.md, the team
 * notes; drivers: compare.py, bench/netns/run.sh). The name is older than -C and kept: the build
 * and the scripts use it.
 *
 * One source, built once per MPI (build.sh: mpicc.openmpi and mpicc.mpich), so the two MPIs run
 * exactly the same program. Method and table follow nccl-tests and tutti-bench, so the rows of
 * all peers compare line by line:
 *   - float32, out of place (broadcast: MPI_Bcast has one buffer), sizes -b..-e by factor -f;
 *   - a row's size and count are tutti-bench's (bench/support/table.hpp, shape_of): allreduce and
 *     broadcast move size/4 floats; allgather and reduce_scatter take count = size/4/n floats per
 *     rank and the size column is the total count*n*4 bytes (rounded down to whole floats per rank);
 *   - -w warm-up iterations at the largest size once, then -w before every size (protocol
 *     switches and first-touch of the library's own scratch happen outside the timed loop);
 *   - MPI_Barrier, then -n timed iterations; a rank's time is its mean per iteration, the row's
 *     time is the max over ranks (MPI_Reduce with MPI_MAX);
 *   - algbw = size / time, busbw = algbw * nccl-tests' factor: allreduce 2(n-1)/n, allgather and
 *     reduce_scatter (n-1)/n, broadcast 1 (tutti-bench's bus_factor);
 *   - after the timed loop the output is poisoned and one more, untimed call is checked exactly
 *     (integer-valued inputs make float sums exact in any order): #wrong. Allreduce: the sum;
 *     allgather: block p is rank p's input; reduce_scatter: the sum of this rank's block;
 *     broadcast (root 0): the root's values.
 * Header line 2 names the collective (`collective allgather`); for allreduce, the default, it is
 * left as it always was, so every allreduce table is byte-identical to those before -C: a line 2
 * without `collective` is allreduce.
 * Buffers are allocated once at the largest size and touched before any timing: the peers'
 * page-fault behaviour on their own scratch (PEERS.md) is theirs to show, ours is kept out.
 *
 * Build: mpicc.openmpi -O2 -std=c11 bench/peers/mpi_allreduce_bench.c -o mpi-allreduce-bench-openmpi
 * Run:   mpirun.openmpi -np 2 --bind-to none ./mpi-allreduce-bench-openmpi [-C allgather] -b 8 -e 256M
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rank r's element i is ((7i + 13r) mod 17) - 8: small integers, so every partial sum is exact
 * in float and the expected result depends only on i mod 17. */
enum { period = 17 };

static float input_value(int rank, size_t i) {
  return (float)((long)((i * 7 + (size_t)rank * 13) % period) - 8);
}

/* The collectives -C names, with tutti-bench's names and table columns (bench/support/options.hpp). */
enum collective { allreduce, allgather, reduce_scatter, broadcast };
static const char* const collective_names[] = {"allreduce", "allgather", "reduce_scatter", "broadcast"};
enum { root = 0 }; /* broadcast's, tutti-bench's default -r */

struct options {
  size_t min_bytes, max_bytes, step_factor;
  int iters, warmup, check;
  enum collective coll;
};

static int rank_ = 0;

static void die(const char* what) {
  if (rank_ == 0) fprintf(stderr, "mpi_allreduce_bench: error: %s\n", what);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2); /* not reached */
}

/* A byte count with an optional binary K/M/G suffix, like nccl-tests' -b/-e. */
static size_t parse_bytes(const char* s) {
  char* end = NULL;
  errno = 0;
  unsigned long long n = strtoull(s, &end, 10);
  if (end == s || errno != 0) die("-b/-e: not a byte size (like 8, 512K, 64M, 1G)");
  switch (*end) {
    case 'K': case 'k': n <<= 10; ++end; break;
    case 'M': case 'm': n <<= 20; ++end; break;
    case 'G': case 'g': n <<= 30; ++end; break;
    default: break;
  }
  if (*end != '\0') die("-b/-e: not a byte size (like 8, 512K, 64M, 1G)");
  return (size_t)n;
}

static int parse_int(const char* s, int lo, const char* flag) {
  char* end = NULL;
  long n = strtol(s, &end, 10);
  if (end == s || *end != '\0' || n < lo || n > (1L << 30)) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s '%s': expected an integer >= %d", flag, s, lo);
    die(msg);
  }
  return (int)n;
}

static struct options parse(int argc, char** argv) {
  struct options o = {8, (size_t)256 << 20, 2, 20, 5, 1, allreduce};
  opterr = 0;
  for (int c; (c = getopt(argc, argv, "b:e:f:n:w:c:C:h")) != -1;) {
    switch (c) {
      case 'C': {
        int k = 0;
        while (k < 4 && strcmp(optarg, collective_names[k]) != 0) ++k;
        if (k == 4) die("-C: one of allreduce, allgather, reduce_scatter, broadcast");
        o.coll = (enum collective)k;
        break;
      }
      case 'b': o.min_bytes = parse_bytes(optarg); break;
      case 'e': o.max_bytes = parse_bytes(optarg); break;
      case 'f': o.step_factor = (size_t)parse_int(optarg, 2, "-f"); break;
      case 'n': o.iters = parse_int(optarg, 1, "-n"); break;
      case 'w': o.warmup = parse_int(optarg, 0, "-w"); break;
      case 'c': o.check = parse_int(optarg, 0, "-c") != 0; break;
      case 'h':
        if (rank_ == 0)
          printf("usage: mpirun -np N mpi_allreduce_bench [-C allreduce] [-b 8] [-e 256M] [-f 2] [-n 20] [-w 5] [-c 1]\n"
                 "-C allreduce|allgather|reduce_scatter|broadcast (root 0), float32 (sum), out of place;\n"
                 "prints the nccl-tests table on rank 0 with tutti-bench's size, count and busbw.\n");
        MPI_Finalize();
        exit(0);
      default: die("unknown option or missing value (-h lists the options)");
    }
  }
  if (optind < argc) die("unexpected argument (-h lists the options)");
  if (o.min_bytes < sizeof(float)) die("-b: the smallest size must be at least 4 bytes (one float)");
  if (o.min_bytes > o.max_bytes) die("-b is larger than -e");
  return o;
}

/* nccl-tests' getFloatStr(value, 7): 7 characters with as many decimals as fit. */
static void format_time(char* out, size_t n, double us) {
  int power = 0;
  for (double v = 1; us >= v; v *= 10) ++power;
  if (power < 5) snprintf(out, n, "%7.2f", us);
  else if (power < 6) snprintf(out, n, "%7.1f", us);
  else if (power < 8) snprintf(out, n, "%7.0f", us);
  else snprintf(out, n, "%7.1e", us);
}

/* First line of MPI_Get_library_version, whitespace runs collapsed (MPICH pads with tabs). */
static void library_name(char* out, size_t n) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  size_t k = 0;
  int space = 0;
  for (int i = 0; i < len && version[i] != '\n' && version[i] != '\0' && k + 1 < n; ++i) {
    if (isspace((unsigned char)version[i])) {
      space = k > 0;
      continue;
    }
    if (space && k + 2 < n) out[k++] = ' ';
    space = 0;
    out[k++] = version[i];
  }
  out[k] = '\0';
}

static float* allocate_touched(size_t bytes) {
  const size_t page = 4096;
  const size_t rounded = (bytes + page - 1) / page * page + page; /* never 0 */
  float* p = aligned_alloc(page, rounded);
  if (!p) die("out of memory for the buffers");
  memset(p, 0, rounded); /* first touch before any timing */
  return p;
}

/* A row's count argument: all elements for allreduce and broadcast, elements per rank for
 * allgather and reduce_scatter (tutti-bench's shape_of); its size column is count*n floats there. */
static size_t count_of(enum collective c, size_t size, int nranks) {
  const size_t all = size / sizeof(float);
  return c == allgather || c == reduce_scatter ? all / (size_t)nranks : all;
}

static size_t row_bytes(enum collective c, size_t count, int nranks) {
  return (c == allgather || c == reduce_scatter ? count * (size_t)nranks : count) * sizeof(float);
}

/* busbw / algbw, nccl-tests' factors (tutti-bench's bus_factor). */
static double bus_factor(enum collective c, int n) {
  switch (c) {
    case allreduce: return 2.0 * (n - 1) / n;
    case allgather:
    case reduce_scatter: return (double)(n - 1) / n;
    case broadcast: return 1.0;
  }
  return 1.0;
}

/* The measured call. send: this rank's input (allreduce, allgather: count floats; reduce_scatter:
 * count*n); recv: the output (broadcast: also the root's input, MPI_Bcast has one buffer). */
static void call(enum collective c, const float* send, float* recv, size_t count) {
  switch (c) {
    case allreduce: MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case allgather: MPI_Allgather(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, MPI_COMM_WORLD); break;
    case reduce_scatter: MPI_Reduce_scatter_block(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case broadcast: MPI_Bcast(recv, (int)count, MPI_FLOAT, root, MPI_COMM_WORLD); break;
  }
}

/* Poisons the output, runs one more call and counts this rank's wrong elements. `expected[m]` is
 * the sum over ranks of element index m (mod period). */
static long long checked_call(enum collective c, const float* send, float* recv, size_t count, int nranks,
                              const float* expected) {
  const size_t out_count = c == allgather ? count * (size_t)nranks : count;
  if (!(c == broadcast && rank_ == root)) /* the root's buffer is its input */
    memset(recv, 0xff, out_count * sizeof(float)); /* NaN: a result that was not written is counted */
  call(c, send, recv, count);
  long long wrong = 0;
  switch (c) {
    case allreduce:
      for (size_t i = 0, m = 0; i < count; ++i, m = m + 1 == period ? 0 : m + 1) wrong += !(recv[i] == expected[m]);
      break;
    case reduce_scatter: /* this rank's block of the sum: element indices rank*count .. */
      for (size_t i = 0, m = (size_t)rank_ * count % period; i < count; ++i, m = m + 1 == period ? 0 : m + 1)
        wrong += !(recv[i] == expected[m]);
      break;
    case allgather: /* block p is rank p's input */
      for (int p = 0; p < nranks; ++p)
        for (size_t i = 0; i < count; ++i) wrong += !(recv[(size_t)p * count + i] == input_value(p, i));
      break;
    case broadcast:
      for (size_t i = 0; i < count; ++i) wrong += !(recv[i] == input_value(root, i));
      break;
  }
  return wrong;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const struct options o = parse(argc, argv);
  const enum collective coll = o.coll;

  /* Both buffers hold the largest size (allgather's send and reduce_scatter's recv need 1/n of it). */
  const size_t max_count = o.max_bytes / sizeof(float);
  float* send = allocate_touched(max_count * sizeof(float));
  float* recv = allocate_touched(max_count * sizeof(float));
  for (size_t i = 0; i < max_count; ++i) send[i] = input_value(rank_, i);
  if (coll == broadcast && rank_ == root) memcpy(recv, send, max_count * sizeof(float));
  float expected[period];
  for (int m = 0; m < period; ++m) {
    expected[m] = 0;
    for (int r = 0; r < nranks; ++r) expected[m] += input_value(r, (size_t)m);
  }

  const int reduces = coll == allreduce || coll == reduce_scatter;
  if (rank_ == 0) {
    char name[256];
    library_name(name, sizeof name);
    printf("# mpi_allreduce_bench: %s\n", name);
    if (coll == allreduce) /* unchanged since before -C */
      printf("# nranks %d  dtype float  op sum  out-of-place  cpus %ld\n", nranks, sysconf(_SC_NPROCESSORS_ONLN));
    else if (coll == broadcast)
      printf("# nranks %d  dtype float  op none  root %d  in-place (MPI_Bcast has one buffer)  collective %s  cpus %ld\n",
             nranks, root, collective_names[coll], sysconf(_SC_NPROCESSORS_ONLN));
    else
      printf("# nranks %d  dtype float  op %s  out-of-place  collective %s  cpus %ld\n", nranks,
             reduces ? "sum" : "none", collective_names[coll], sysconf(_SC_NPROCESSORS_ONLN));
    printf("# minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d validation: %d\n",
           o.min_bytes, o.max_bytes, o.step_factor, o.warmup, o.iters, o.check);
    printf("#\n# %s\n", coll == broadcast ? "in-place" : "out-of-place");
    printf("#       size         count      type   redop    root     time   algbw   busbw #wrong\n");
    printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       \n");
    fflush(stdout);
  }

  for (int i = 0; i < o.warmup; ++i) call(coll, send, recv, count_of(coll, o.max_bytes, nranks));

  long long total_wrong = 0;
  double busbw_sum = 0;
  int rows = 0;
  for (size_t size = o.min_bytes;; size *= o.step_factor) {
    const size_t count = count_of(coll, size, nranks);
    const size_t bytes = row_bytes(coll, count, nranks);
    if (count > (size_t)INT32_MAX) die("-e: more than 2^31-1 floats do not fit MPI's int count");

    for (int i = 0; i < o.warmup; ++i) call(coll, send, recv, count);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < o.iters; ++i) call(coll, send, recv, count);
    const double mean_us = (MPI_Wtime() - t0) / o.iters * 1e6;
    double max_us = 0;
    MPI_Reduce(&mean_us, &max_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    long long wrong = 0, all_wrong = 0;
    if (o.check) {
      wrong = checked_call(coll, send, recv, count, nranks, expected);
      MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    }

    if (rank_ == 0) {
      const double algbw = max_us > 0 ? (double)bytes / max_us / 1e3 : 0; /* GB/s */
      const double busbw = algbw * bus_factor(coll, nranks);
      char time[32], wrong_str[32];
      format_time(time, sizeof time, max_us);
      if (o.check) snprintf(wrong_str, sizeof wrong_str, "%lld", all_wrong);
      else snprintf(wrong_str, sizeof wrong_str, "N/A");
      printf("%12zu  %12zu  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s\n", bytes, count, "float", reduces ? "sum" : "none",
             coll == broadcast ? root : -1, time, algbw, busbw, wrong_str);
      fflush(stdout);
      total_wrong += all_wrong;
      busbw_sum += busbw;
      ++rows;
    }
    if (size > o.max_bytes / o.step_factor) break;
  }

  if (rank_ == 0) {
    printf("# Out of bounds values : %lld %s\n", total_wrong, total_wrong == 0 ? "OK" : "FAILED");
    printf("# Avg bus bandwidth : %g\n", rows ? busbw_sum / rows : 0.0);
    printf("#\n");
  }
  free(send);
  free(recv);
  MPI_Bcast(&total_wrong, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return total_wrong == 0 ? 0 : 1;
}
