//! Ranks that disagree about a collective get tutti::mismatch on every rank, naming both values,
//! before any data moves; the communicator stays usable afterwards.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <tutti/tutti.hpp>

namespace {

//! Every case below runs with ring (the communicator's separate check), eager (the check in its
//! frames, and small calls finished there) and automatic (eager's check before its schedule over
//! threads, a two-sided transport): the same errors, worded alike, from all three.
template <class A>
using comm_of = tutti::communicator<tutti::transport::inproc, A>;
#define TUTTI_MISMATCH_ALGORITHMS tutti::algorithm::ring, tutti::algorithm::eager, tutti::algorithm::automatic

struct outcome {
  std::vector<std::string> messages;  //!< per rank: what() of what it threw, "" when nothing
  std::vector<int> kinds;             //!< 0 none, 1 mismatch, 2 invalid_argument, 3 timeout, 4 peer_lost, 5 other
};

//! Runs body(comm) on `world` ranks, then a correct allreduce to prove the communicator still works.
template <class A>
outcome run(int world, const std::function<void(comm_of<A>&)>& body, bool check_after = true) {
  outcome out{std::vector<std::string>(world), std::vector<int>(world, 0)};
  auto opts = tutti::communicator_options::from_env();
  opts.timeout = std::chrono::seconds(20);
  auto errors = tutti::transport::inproc::run(world, [&](tutti::transport::inproc& t) {
    comm_of<A> comm(t, opts);
    const auto r = static_cast<std::size_t>(comm.rank());
    try {
      body(comm);
    } catch (const tutti::mismatch& e) {
      out.messages[r] = e.what(), out.kinds[r] = 1;
    } catch (const tutti::invalid_argument& e) {
      out.messages[r] = e.what(), out.kinds[r] = 2;
    }
    if (check_after) {
      std::vector<int> v(5, 1);
      comm.allreduce(v, tutti::op::sum);
      REQUIRE(v[4] == comm.size());
    }
  });
  for (auto& e : errors) REQUIRE_FALSE(e);
  return out;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE_TEMPLATE("different counts: every rank gets mismatch naming both counts; buffers untouched", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  for (int world : {2, 3, 5}) {
    auto out = run<A>(world, [](comm_t& comm) {
      std::vector<float> v(comm.rank() == comm.size() - 1 ? 6 : 7, 1.5f);
      const auto before = v;
      try {
        comm.allreduce(v, tutti::op::sum);
      } catch (...) {
        CHECK(v == before);  // never corrupted output
        throw;
      }
    });
    for (int r = 0; r < world; ++r) {
      INFO("rank ", r, ": ", out.messages[r]);
      CHECK(out.kinds[r] == 1);
      CHECK(contains(out.messages[r], "rank " + std::to_string(r) + ": allreduce"));
      CHECK(contains(out.messages[r], "count=7"));
      CHECK(contains(out.messages[r], "count=6"));
      CHECK(contains(out.messages[r], "rank " + std::to_string(world - 1) + " has count=6"));
    }
  }
}

TEST_CASE_TEMPLATE("counts on each of eager's paths (8, 4096 and 100,003 floats): mismatch on every rank", A,
                   TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  // On 3 ranks 8 floats go whole in one round, 4096 in blocks over two, 100,003 take the check and
  // then ring: every rank's first frame is received into a buffer of the frame's full capacity,
  // so all still meet and judge, in every combination.
  const std::vector<std::vector<std::size_t>> cases = {{8, 4096, 100003}, {8, 4096, 8}, {4096, 100003, 4096}, {8, 8, 100003}};
  for (const auto& counts : cases) {
    auto out = run<A>(3, [&](comm_t& comm) {
      std::vector<float> v(counts[static_cast<std::size_t>(comm.rank())], 1.0f);
      comm.allreduce(v, tutti::op::sum);
    });
    for (int r = 0; r < 3; ++r) {
      INFO("counts ", counts[0], " ", counts[1], " ", counts[2], ", rank ", r, ": ", out.messages[r]);
      CHECK(out.kinds[r] == 1);
      // The message names rank 0's count and the first that differs from it.
      const std::size_t other = counts[1] != counts[0] ? counts[1] : counts[2];
      CHECK(contains(out.messages[r], "count=" + std::to_string(counts[0])));
      CHECK(contains(out.messages[r], "count=" + std::to_string(other)));
    }
  }
}

TEST_CASE_TEMPLATE("reduce_scatter block counts on each of eager's paths: mismatch on every rank, outputs untouched", A,
                   TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  // On 3 ranks blocks of 8 floats halve inside the rounds (3 blocks fit a frame), 2000 take the
  // check and one round of direct blocks, 100,003 the check and ring.
  const std::vector<std::vector<std::size_t>> cases = {{8, 2000, 100003}, {8, 2000, 8}, {2000, 100003, 2000}, {8, 8, 100003}};
  for (const auto& counts : cases) {
    auto out = run<A>(3, [&](comm_t& comm) {
      const std::size_t count = counts[static_cast<std::size_t>(comm.rank())];
      std::vector<float> in(3 * count, 1.0f), result(count, -2.0f);
      try {
        comm.reduce_scatter(in, result, tutti::op::sum);
      } catch (...) {
        CHECK(std::all_of(result.begin(), result.end(), [](float x) { return x == -2.0f; }));
        throw;
      }
    });
    for (int r = 0; r < 3; ++r) {
      INFO("counts ", counts[0], " ", counts[1], " ", counts[2], ", rank ", r, ": ", out.messages[r]);
      CHECK(out.kinds[r] == 1);
      const std::size_t other = counts[1] != counts[0] ? counts[1] : counts[2];
      CHECK(contains(out.messages[r], "count=" + std::to_string(counts[0])));
      CHECK(contains(out.messages[r], "count=" + std::to_string(other)));
    }
  }
}

TEST_CASE_TEMPLATE("different dtypes: mismatch naming both dtypes", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  auto out = run<A>(3, [](comm_t& comm) {
    if (comm.rank() == 1) {
      std::vector<double> v(4, 1.0);
      comm.allreduce(v, tutti::op::sum);
    } else {
      std::vector<float> v(4, 1.0f);
      comm.allreduce(v, tutti::op::sum);
    }
  });
  for (int r = 0; r < 3; ++r) {
    INFO(out.messages[r]);
    CHECK(out.kinds[r] == 1);
    CHECK(contains(out.messages[r], "rank 0 has dtype=float, rank 1 has dtype=double"));
  }
}

TEST_CASE_TEMPLATE("different ops: mismatch naming both ops", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  auto out = run<A>(4, [](comm_t& comm) {
    std::vector<int> v(4, 1);
    comm.allreduce(v, comm.rank() == 2 ? tutti::op::max : tutti::op::sum);
  });
  for (int r = 0; r < 4; ++r) {
    INFO(out.messages[r]);
    CHECK(out.kinds[r] == 1);
    CHECK(contains(out.messages[r], "rank 0 has op=sum, rank 2 has op=max"));
  }
}

TEST_CASE_TEMPLATE("different broadcast roots: mismatch naming both roots", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  auto out = run<A>(3, [](comm_t& comm) {
    std::vector<int> v(4, 1);
    comm.broadcast(v, comm.rank() == 0 ? 0 : 1);
  });
  for (int r = 0; r < 3; ++r) {
    INFO(out.messages[r]);
    CHECK(out.kinds[r] == 1);
    CHECK(contains(out.messages[r], "rank 0 has root=0, rank 1 has root=1"));
  }
}

TEST_CASE_TEMPLATE("different reduce roots: mismatch naming both roots; no output written", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  auto out = run<A>(3, [](comm_t& comm) {
    std::vector<int> v(4, 1);
    comm.reduce(v, tutti::op::sum, comm.rank() == 2 ? 1 : 0);
    if (v != std::vector<int>(4, 1)) throw std::runtime_error("buffer changed");
  });
  for (int r = 0; r < 3; ++r) {
    INFO(out.messages[r]);
    CHECK(out.kinds[r] == 1);
    CHECK(contains(out.messages[r], "reduce #1: ranks disagree: rank 0 has root=0, rank 2 has root=1"));
  }
}

TEST_CASE_TEMPLATE("a rank calling a different collective: mismatch naming both collectives", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  auto out = run<A>(3, [](comm_t& comm) {
    std::vector<int> v(4, 1);
    if (comm.rank() == 2) comm.broadcast(v, 0);
    else comm.allreduce(v, tutti::op::sum);
  });
  for (int r = 0; r < 3; ++r) {
    INFO(out.messages[r]);
    CHECK(out.kinds[r] == 1);
    CHECK(contains(out.messages[r], "rank 0 has allreduce #1, rank 2 has broadcast #1"));
  }
}

TEST_CASE_TEMPLATE("a rank that skipped a collective is named by its sequence number", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  auto out = run<A>(2, [](comm_t& comm) {
    std::vector<int> v(4, 1);
    if (comm.rank() == 0) {
      comm.allreduce(v, tutti::op::sum);  // pairs with rank 1's barrier: a mismatch, then...
    } else {
      comm.barrier();
    }
  });
  CHECK(out.kinds[0] == 1);
  CHECK(contains(out.messages[0], "rank 0 has allreduce #1, rank 1 has barrier #1"));
  CHECK(out.kinds[1] == 1);
}

TEST_CASE_TEMPLATE("a rank that refuses its own arguments: it says why, the others name it", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  auto out = run<A>(3, [](comm_t& comm) {
    std::vector<float> in(8, 1.0f), out_buf(comm.rank() == 1 ? 9 : 8);
    comm.allreduce(in, out_buf, tutti::op::sum);
  });
  INFO(out.messages[1]);
  CHECK(out.kinds[1] == 2);
  CHECK(contains(out.messages[1], "rank 1: allreduce #1: send has 8 elements but recv has 9"));
  for (int r : {0, 2}) {
    INFO(out.messages[r]);
    CHECK(out.kinds[r] == 2);
    CHECK(contains(out.messages[r], "rank 1 refused its arguments"));
  }
}

TEST_CASE_TEMPLATE("bad arguments are refused with the offending value", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  struct bad_case {
    const char* what;
    std::function<void(comm_t&)> call;
  };
  const std::vector<bad_case> cases = {
      {"root 3 is outside [0, 2)", [](comm_t& c) { std::vector<int> v(2); c.broadcast(v, 3); }},
      {"root -1 is outside [0, 2)", [](comm_t& c) { std::vector<int> v(2); c.broadcast(v, -1); }},
      {"send has 5 elements but must have world_size (2) x recv count (3)",
       [](comm_t& c) { std::vector<int> in(5), out(3); c.reduce_scatter(in, out, tutti::op::sum); }},
      {"recv has 5 elements but must have world_size (2) x send count (3)",
       [](comm_t& c) { std::vector<int> in(3), out(5); c.allgather(in, out); }},
      {"null buffer with a non-zero count",
       [](comm_t& c) { c.allreduce(tutti::tensor_view(nullptr, 4, tutti::dtype::f32), tutti::op::sum); }},
      {"send dtype float differs from recv dtype int32",
       [](comm_t& c) { std::vector<float> in(2); std::vector<int> out(2); c.allreduce(in, out, tutti::op::sum); }},
      {"overlap without being the in-place layout",
       [](comm_t& c) {
         std::vector<float> v(10);
         c.allreduce(tutti::const_tensor_view(v.data(), 6, tutti::dtype::f32),
                     tutti::tensor_view(v.data() + 2, 6, tutti::dtype::f32), tutti::op::sum);
       }},
      {"reduce #1: root 2 is outside [0, 2)",
       [](comm_t& c) { std::vector<int> v(2); c.reduce(v, tutti::op::sum, 2); }},
      {"alltoall #1: send has 5 elements, not a multiple of world_size (2)",
       [](comm_t& c) { std::vector<int> in(5), out(5); c.alltoall(in, out); }},
      {"alltoall #1: send has 4 elements but recv has 6",
       [](comm_t& c) { std::vector<int> in(4), out(6); c.alltoall(in, out); }},
      {"op value 9 is not a tutti::op",
       [](comm_t& c) { std::vector<float> v(2); c.allreduce(v, static_cast<tutti::op>(9)); }},
  };
  for (const auto& bc : cases) {
    auto out = run<A>(2, bc.call);
    for (int r = 0; r < 2; ++r) {
      INFO(bc.what, " | rank ", r, ": ", out.messages[r]);
      CHECK(out.kinds[r] == 2);
      CHECK(contains(out.messages[r], "rank " + std::to_string(r) + ": "));
      CHECK(contains(out.messages[r], bc.what));
    }
  }
}

TEST_CASE_TEMPLATE("a rank that never enters the collective: the others time out, not hang", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  auto opts = tutti::communicator_options::from_env();
  opts.timeout = std::chrono::milliseconds(300);
  std::atomic<bool> release{false};
  std::vector<std::string> what(3);
  const auto start = std::chrono::steady_clock::now();
  auto errors = tutti::transport::inproc::run(3, [&](tutti::transport::inproc& t) {
    comm_t comm(t, opts);
    if (comm.rank() == 2) {  // alive but busy elsewhere
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    std::vector<int> v(4, 1);
    try {
      comm.allreduce(v, tutti::op::sum);
    } catch (const tutti::timeout& e) {
      what[static_cast<std::size_t>(comm.rank())] = e.what();
    } catch (const tutti::peer_lost& e) {  // the other waiting rank timed out first and left
      what[static_cast<std::size_t>(comm.rank())] = std::string("peer_lost: ") + e.what();
    }
    if (comm.rank() == 0) release.store(true);
  });
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (auto& e : errors) CHECK_FALSE(e);
  CHECK(elapsed < 5.0);
  for (int r : {0, 1}) {
    INFO(what[static_cast<std::size_t>(r)]);
    CHECK(contains(what[static_cast<std::size_t>(r)], "rank " + std::to_string(r) + ": allreduce #1"));
  }
  CHECK((contains(what[0], "did not complete before the deadline") || contains(what[1], "did not complete before the deadline")));
}

TEST_CASE_TEMPLATE("a rank that dies mid-job: every survivor gets peer_lost naming it, quickly", A, TUTTI_MISMATCH_ALGORITHMS) {
  using comm_t = comm_of<A>;
  std::vector<int> lost(4, -1);
  const auto start = std::chrono::steady_clock::now();
  auto errors = tutti::transport::inproc::run(4, [&](tutti::transport::inproc& t) {
    comm_t comm(t);  // default TUTTI_TIMEOUT: the test proves we do not wait for it
    std::vector<float> v(1 << 16, 1.0f);
    comm.allreduce(v, tutti::op::sum);
    if (comm.rank() == 3) throw std::runtime_error("rank 3 crashes");
    try {
      comm.allreduce(v, tutti::op::sum);
    } catch (const tutti::peer_lost& e) {
      lost[static_cast<std::size_t>(comm.rank())] = e.peer();
      // later calls refuse at once instead of touching a half-finished state
      CHECK_THROWS_AS(comm.allreduce(v, tutti::op::sum), tutti::error);
    }
  });
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(elapsed < 5.0);
  CHECK(errors[3] != nullptr);
  for (int r = 0; r < 3; ++r) {
    CHECK_FALSE(errors[static_cast<std::size_t>(r)]);
    // the survivor learns of rank 3 directly, or of a survivor that itself gave up on rank 3
    CHECK(lost[static_cast<std::size_t>(r)] >= 0);
  }
  CHECK(std::count(lost.begin(), lost.end(), 3) >= 1);
}

// ---- lossy codecs ------------------------------------------------------------------------------

namespace {

template <class Codec, class Algorithm = tutti::algorithm::ring>
using lossy_comm_t = tutti::communicator<tutti::transport::inproc, Algorithm, Codec>;

//! Runs body(comm) on every rank of a world of lossy_comm_t<Codec>s; returns each rank's error text
//! ("" when none) and checks that a float avg still works afterwards (the communicator is usable).
template <class Codec, class Algorithm = tutti::algorithm::ring, class Body>
std::vector<std::string> run_lossy(int world, Body body) {
  std::vector<std::string> messages(static_cast<std::size_t>(world));
  auto errors = tutti::transport::inproc::run(world, [&](tutti::transport::inproc& t) {
    lossy_comm_t<Codec, Algorithm> comm(t);
    try {
      body(comm);
    } catch (const tutti::invalid_argument& e) {
      messages[static_cast<std::size_t>(comm.rank())] = std::string("invalid_argument: ") + e.what();
    }
    std::vector<float> v(300, 1.0f);
    comm.allreduce(v, tutti::op::avg);
    REQUIRE(std::fabs(v[299] - 1.0f) < 0x1p-7f);  // lossy, but close: the communicator still works
  });
  for (auto& e : errors) REQUIRE_FALSE(e);
  return messages;
}

}  // namespace

TEST_CASE("a lossy codec refuses integer dtypes and min/max/prod at run time, naming rank, collective, codec and dtype") {
  auto ints = run_lossy<tutti::codec::fp16>(3, [](auto& comm) {
    std::vector<std::int32_t> v(8, 1);
    comm.allreduce(tutti::tensor_view(std::span(v)), tutti::op::sum);  // a view: the type is not known at compile time
  });
  for (int r = 0; r < 3; ++r) {
    INFO(ints[r]);
    CHECK(contains(ints[r], "invalid_argument: rank " + std::to_string(r) + ": allreduce #1: "));
    CHECK(contains(ints[r], "codec fp16 carries float32 only; got dtype int32"));
  }
  auto ops = run_lossy<tutti::codec::int8, tutti::algorithm::halving_doubling>(4, [](auto& comm) {
    std::vector<float> v(8, 1.0f);
    comm.allreduce(v, tutti::op::max);
  });
  for (int r = 0; r < 4; ++r) {
    INFO(ops[r]);
    CHECK(contains(ops[r], "rank " + std::to_string(r) + ": allreduce #1: codec int8 carries sum and avg only; got op max with dtype float"));
  }
}

TEST_CASE("ranks built with different codecs get a mismatch naming both, before any data moves") {
  auto opts = tutti::communicator_options::from_env();
  opts.timeout = std::chrono::seconds(20);
  std::vector<std::string> messages(3);
  auto errors = tutti::transport::inproc::run(3, [&](tutti::transport::inproc& t) {
    std::vector<float> v(64, 2.0f);
    const auto before = v;
    try {
      if (t.rank() == 2) {
        lossy_comm_t<tutti::codec::int8> comm(t, opts);
        comm.allreduce(v, tutti::op::sum);
      } else {
        lossy_comm_t<tutti::codec::fp16> comm(t, opts);
        comm.allreduce(v, tutti::op::sum);
      }
    } catch (const tutti::mismatch& e) {
      messages[static_cast<std::size_t>(t.rank())] = e.what();
    }
    CHECK(v == before);
  });
  for (auto& e : errors) REQUIRE_FALSE(e);
  for (int r = 0; r < 3; ++r) {
    INFO(messages[r]);
    CHECK(contains(messages[r], "rank " + std::to_string(r) + ": allreduce #1: ranks disagree: rank 0 has codec=fp16, rank 2 has codec=int8"));
  }
}

TEST_CASE("an error_feedback kept for one tensor and used for another is refused, naming both counts") {
  std::vector<std::string> messages(2);
  auto errors = tutti::transport::inproc::run(2, [&](tutti::transport::inproc& t) {
    tutti::communicator<tutti::transport::inproc, tutti::algorithm::ring, tutti::codec::topk> comm(t);
    tutti::error_feedback feedback;
    std::vector<float> a(100, 1.0f), b(50, 1.0f);
    comm.allreduce(a, tutti::op::sum, feedback);
    CHECK(feedback.residual().size() == 100);
    try {
      comm.allreduce(b, tutti::op::sum, feedback);
    } catch (const tutti::invalid_argument& e) {
      messages[static_cast<std::size_t>(t.rank())] = e.what();
    }
  });
  for (auto& e : errors) REQUIRE_FALSE(e);
  for (int r = 0; r < 2; ++r) {
    INFO(messages[r]);
    CHECK(contains(messages[r], "rank " + std::to_string(r) + ": allreduce #2: this error_feedback holds the residual of 100 elements, but the tensor has 50"));
  }
}
