//! @file star.hpp  A user's own algorithm, in the user's own project: "star" — every rank sends to
//! rank 0, which reduces and sends the result back. Simple and slow (rank 0 does all the work); it
//! is here to show what an algorithm is made of, not to be used.
//!
//! An algorithm is a struct with a role, a name and static collectives templated on the context.
//! Everything it does goes through the context `c`: rank(), size(), send/recv (a request to wait
//! on; messages of one collective match in posting order per pair of ranks), wait (with the
//! collective's deadline), scratch(bytes) (reused memory), and tutti::reduce / tutti::finish_avg
//! for the arithmetic, which is type-erased and vectorised. Collectives left out (reduce_scatter,
//! allgather, ...) are compile-time errors at the call site that name them. The last line lists
//! star among the algorithms those errors offer (tutti/core/listed.hpp): nothing in tutti changes.
#pragma once
#include <tutti/tutti.hpp>

#include <cstddef>
#include <cstring>
#include <string_view>
#include <vector>

namespace my_project {

struct star {
  using tutti_role = tutti::role::algorithm;
  static constexpr std::string_view name = "star";

  template <class Ctx>
  static void allreduce(Ctx& c, const void* in, void* out, std::size_t count, tutti::dtype t, tutti::op o) {
    const std::size_t bytes = count * tutti::size_of(t);
    if (in != out && bytes) std::memcpy(out, in, bytes);  // in place when in == out
    if (bytes == 0 || c.size() == 1) return;              // zero-length: no message on either side
    if (c.rank() == 0) {
      std::byte* incoming = c.scratch(bytes);
      for (int peer = 1; peer < c.size(); ++peer) {
        c.wait(c.recv(peer, incoming, bytes));
        tutti::reduce(t, o, out, out, incoming, count);  // op::avg sums here...
      }
      if (o == tutti::op::avg) tutti::finish_avg(t, out, count, c.size());  // ...and divides once
      for (int peer = 1; peer < c.size(); ++peer) c.wait(c.send(peer, out, bytes));
    } else {
      c.wait(c.send(0, out, bytes));
      c.wait(c.recv(0, out, bytes));
    }
  }

  template <class Ctx>
  static void broadcast(Ctx& c, const void* in, void* out, std::size_t count, tutti::dtype t, int root) {
    const std::size_t bytes = count * tutti::size_of(t);
    if (c.rank() == root && in != out && bytes) std::memcpy(out, in, bytes);
    if (bytes == 0) return;
    if (c.rank() == root) {
      // Post every send, then wait for all: the requests are independent.
      std::vector<typename Ctx::request> sent;
      for (int peer = 0; peer < c.size(); ++peer)
        if (peer != root) sent.push_back(c.send(peer, out, bytes));
      for (auto& r : sent) c.wait(r);
    } else {
      c.wait(c.recv(root, out, bytes));
    }
  }

  template <class Ctx>
  static void barrier(Ctx& c) {
    if (c.size() == 1) return;
    std::byte* token = c.scratch(1);
    if (c.rank() == 0) {
      for (int peer = 1; peer < c.size(); ++peer) c.wait(c.recv(peer, token, 1));
      for (int peer = 1; peer < c.size(); ++peer) c.wait(c.send(peer, token, 1));
    } else {
      c.wait(c.send(0, token, 1));
      c.wait(c.recv(0, token, 1));
    }
  }
};

static_assert(tutti::algorithm_policy<star>, "star must satisfy tutti::algorithm_policy");

}  // namespace my_project

// Offered by the communicator's compile-time refusals wherever star has the collective called
// ("built algorithms that have it: ring, ..., star"); at namespace scope, outside any namespace.
TUTTI_LIST_ALGORITHM(my_project::star);
