//! @file table.hpp  The nccl-tests table: which rows it has, the busbw factors, and how the
//! header, each row and the closing lines are printed.
//!
//! The layout is nccl-tests' own (size count type redop root time algbw busbw #wrong), so numbers
//! compare with what users already know and bench/peers/compare.py parses every program alike.
#pragma once
#include <tutti/tutti.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "expected.hpp"
#include "options.hpp"

namespace bench {

// ---- rows ---------------------------------------------------------------------------------------

//! One row of the table: the collective's byte and element counts.
struct row_shape {
  std::size_t bytes;  //!< "size": total buffer bytes, as nccl-tests prints it (alltoall: one rank's send buffer)
  std::size_t count;  //!< "count": the collective's count argument: all elements for allreduce, broadcast and
                      //!< reduce; elements per rank for reduce_scatter and allgather; per block for alltoall
};

inline row_shape shape_of(const options& o, std::size_t size) {
  const std::size_t esz = tutti::size_of(o.type);
  const auto n = static_cast<std::size_t>(o.ranks);
  switch (o.coll->kind) {
    case collective_kind::reduce_scatter:
    case collective_kind::allgather:
    case collective_kind::alltoall: {
      const std::size_t count = size / esz / n;
      return {count * n * esz, count};
    }
    default: return {size / esz * esz, size / esz};
  }
}

//! -b, -b*f, -b*f^2, ... up to -e.
inline std::vector<std::size_t> sizes_of(const options& o) {
  std::vector<std::size_t> sizes;
  if (o.step_bytes) {  // -i: arithmetic steps, as nccl-tests
    for (std::size_t s = o.min_bytes; s <= o.max_bytes; s += o.step_bytes) {
      sizes.push_back(s);
      if (s > o.max_bytes - o.step_bytes) break;
    }
    return sizes;
  }
  for (std::size_t s = o.min_bytes;; s *= o.step_factor) {
    sizes.push_back(s);
    if (s > o.max_bytes / o.step_factor) break;
  }
  return sizes;
}

//! busbw / algbw: the fraction of the data each rank must move at least, so that busbw is
//! comparable across world sizes (nccl-tests' PERFORMANCE.md; reduce and alltoall as nccl-tests'
//! reduce_perf and alltoall_perf compute them).
inline double bus_factor(collective_kind kind, int n) {
  switch (kind) {
    case collective_kind::allreduce: return 2.0 * (n - 1) / n;
    case collective_kind::reduce_scatter:
    case collective_kind::allgather:
    case collective_kind::alltoall: return static_cast<double>(n - 1) / n;
    case collective_kind::broadcast:
    case collective_kind::reduce: return 1.0;
  }
  return 1.0;
}

// ---- printing -------------------------------------------------------------------------------------

//! What the header says about the run besides the flags.
struct header_info {
  std::string_view transport;   //!< the transport's name
  std::string_view ranks_are;   //!< "threads", "processes"
  std::string_view algorithm;   //!< the algorithm's name
  tutti::communicator_options comm;
  double membw_gbs = 0;            //!< -M 1: memcpy bandwidth, else 0
  std::vector<std::string> notes;  //!< further "# ..." lines: transport settings, buffers
};

//! The header's "codec:" line: what the allreduce puts on the wire, and which bytes the table counts.
inline std::string codec_description(codec_kind c) {
  switch (c) {
    case codec_kind::none: return "none (elements travel as they are)";
    case codec_kind::fp16: return "fp16 (2 B per float on the wire, lossy)";
    case codec_kind::bf16: return "bf16 (2 B per float on the wire, lossy)";
    case codec_kind::int8: return "int8 (1 B per float + one 4 B scale per 256 on the wire, lossy)";
  }
  return "?";
}

//! The three lines naming the columns, shared by every program that prints the table (tutti-bench,
//! tutti-cuda-native-bench), so their output parses alike. `membw`: with the %membw column (-M 1).
inline void print_column_header(bool membw) {
  std::printf("#                                                       out-of-place                       in-place%s\n",
              membw ? "" : "");
  std::printf("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong%s\n",
              membw ? "  %membw" : "");
  std::printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       %s\n",
              membw ? "        " : "");
  std::fflush(stdout);
}

inline void print_header(const options& o, const header_info& h) {
  const unsigned cpus = std::thread::hardware_concurrency();
  std::printf("# tutti-bench: tutti %s, collective %s, transport %s (ranks are %s), algorithm %s, codec %s\n",
              tutti::version, std::string(o.coll->name).c_str(), std::string(h.transport).c_str(),
              std::string(h.ranks_are).c_str(), std::string(h.algorithm).c_str(), std::string(name_of(o.codec)).c_str());
  std::printf("# ranks %d  dtype %s  op %s%s\n", o.ranks, std::string(tutti::name_of(o.type)).c_str(),
              o.coll->reduces ? std::string(tutti::name_of(o.reduction)).c_str() : "none",
              o.coll->rooted ? (std::string("  root ") + std::to_string(o.root)).c_str() : "");
  if (o.step_bytes)
    std::printf("# minBytes %zu maxBytes %zu step: %zu(bytes) warmup iters: %d iters: %d agg iters: %d validation: %d\n",
                o.min_bytes, o.max_bytes, o.step_bytes, o.warmup, o.iters, o.agg_iters, o.check ? 1 : 0);
  else
    std::printf("# minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d agg iters: %d validation: %d\n",
                o.min_bytes, o.max_bytes, o.step_factor, o.warmup, o.iters, o.agg_iters, o.check ? 1 : 0);
  std::printf("# time: %s mean time per collective over -n iterations of -m collectives (-a %d)\n",
              std::string(name_of(o.average)).c_str(), static_cast<int>(o.average));
  std::printf("# chunk_bytes %zu (TUTTI_CHUNK_BYTES)  cross-rank check %s (TUTTI_CHECK)  timeout %.0f s  cpus %u%s\n",
              h.comm.chunk_bytes, h.comm.check ? "on" : "off", std::chrono::duration<double>(h.comm.timeout).count(),
              cpus, cpus && static_cast<unsigned>(o.ranks) > cpus ? " (oversubscribed)" : "");
  std::printf("# codec: %s%s\n", codec_description(o.codec).c_str(),
              o.codec == codec_kind::none ? "" : "; size, algbw and busbw count float32 bytes, as nccl-tests would");
  std::printf("# check: %s\n", check_description(o).c_str());
  for (const auto& note : h.notes) std::printf("# %s\n", note.c_str());
  if (o.membw)
    std::printf("# memory bandwidth (memcpy, 1 thread): %.2f GB/s (bytes read + written, 256 MiB, best of 5)\n",
                h.membw_gbs);
  std::printf("#\n");
  print_column_header(o.membw);
}

//! One row's figures over all ranks.
struct row_result {
  double time_us = 0;      //!< each rank's mean time per collective, aggregated over ranks as -a says
  double wrong = 0;        //!< wrong elements, all ranks
  double allocations = 0;  //!< heap allocations in the timed loop, all ranks
};

//! Totals for the closing lines.
struct summary {
  double busbw_sum = 0;
  std::size_t rows = 0;
  double wrong = 0;
  double allocations = 0;
  double largest_error = -1;  //!< lossy --codec: the largest |result - exact| of any checked element (-1: not measured)
  double largest_bound = 0;   //!< and the largest bound it was held to
};

inline void format_time(char (&out)[32], double us) {  // nccl-tests' getFloatStr(value, 7)
  int power = 0;
  for (double v = 1; us >= v; v *= 10) ++power;
  if (power < 5) std::snprintf(out, sizeof out, "%7.2f", us);
  else if (power < 6) std::snprintf(out, sizeof out, "%7.1f", us);
  else if (power < 8) std::snprintf(out, sizeof out, "%7.0f", us);
  else std::snprintf(out, sizeof out, "%7.1e", us);
}

//! Prints one row, out of place then in place, and adds both to `sum`.
inline void print_row(const options& o, const row_shape& s, const row_result (&r)[2], double membw_gbs, summary& sum) {
  std::printf("%12zu  %12zu  %8s  %6s  %6d", s.bytes, s.count, std::string(tutti::name_of(o.type)).c_str(),
              o.coll->reduces ? std::string(tutti::name_of(o.reduction)).c_str() : "none", o.coll->rooted ? o.root : -1);
  double best_busbw = 0;
  for (const row_result& x : r) {
    const double algbw = x.time_us > 0 ? static_cast<double>(s.bytes) / x.time_us / 1e3 : 0;  // GB/s
    const double busbw = algbw * bus_factor(o.coll->kind, o.ranks);
    char time[32], wrong[32];
    format_time(time, x.time_us);
    if (o.check) std::snprintf(wrong, sizeof wrong, "%.0f", x.wrong);
    else std::snprintf(wrong, sizeof wrong, "N/A");
    std::printf("  %7s  %6.2f  %6.2f  %5s", time, algbw, busbw, wrong);
    sum.busbw_sum += busbw;
    ++sum.rows;
    sum.wrong += x.wrong;
    sum.allocations += x.allocations;
    best_busbw = std::max(best_busbw, busbw);
  }
  if (membw_gbs > 0) std::printf("  %6.1f", 100.0 * best_busbw / membw_gbs);
  std::printf("\n");
  std::fflush(stdout);
}

inline void print_footer(const summary& sum) {
  std::printf("# Out of bounds values : %.0f %s\n", sum.wrong, sum.wrong == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth : %g\n", sum.rows ? sum.busbw_sum / static_cast<double>(sum.rows) : 0.0);
  if (sum.largest_error >= 0)
    std::printf("# Largest |result - exact| of checked elements (all ranks, all sizes): %.3g (bound at most %.3g)\n",
                sum.largest_error, sum.largest_bound);
  std::printf("# Heap allocations in timed loops (all ranks, all sizes): %.0f\n", sum.allocations);
  std::printf("#\n");
  std::fflush(stdout);
}

}  // namespace bench
