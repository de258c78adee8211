//! @file nccl_driver.c  Runs NCCL's example tuner plugin on the CPU: stdin "nNodes nRanks func bytes", stdout the (algorithm/protocol) it preferred (check_nccl.sh).
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tuner.h"
#include "plugin.c"  // NCCL plugins/tuner/example/plugin.c (-I that folder)
static void quiet(ncclDebugLogLevel l, unsigned long f, const char* file, int line, const char* fmt, ...) {
  (void)l; (void)f; (void)file; (void)line; (void)fmt;
}
static const char* algo_names[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
static const char* proto_names[] = {"ll", "ll128", "simple"};
/* stdin lines: nNodes nRanks func bytes ; prints what the plugin preferred */
int main(void) {
  int nodes, ranks, func;
  unsigned long long bytes;
  while (scanf("%d %d %d %llu", &nodes, &ranks, &func, &bytes) == 4) {
    void* ctx = NULL;
    pluginInit(&ctx, 0, ranks, nodes, quiet, NULL, NULL);
    float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) table[a][p] = 1.0f;
    int channels = 0;
    pluginGetCollInfo(ctx, (ncclFunc_t)func, (size_t)bytes, 1, (float**)table, NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, 0, &channels);
    const char* got = "none";
    char buf[64];
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p)
        if (table[a][p] == 0.0f) { snprintf(buf, sizeof buf, "%s/%s", algo_names[a], proto_names[p]); got = buf; }
    printf("%d %d %d %llu -> %s\n", nodes, ranks, func, bytes, got);
    pluginFinalize(ctx);
  }
  return 0;
}
