//! The collective traits table the one checked call reads, and the pieces it drives.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <tutti/tutti.hpp>

namespace {
using namespace tutti;
using ctx = algorithm::context<transport::inproc, codec::none>;

static_assert(is_rooted(collective::broadcast) && is_rooted(collective::reduce));
static_assert(!is_rooted(collective::allreduce) && !is_rooted(collective::alltoall));
static_assert(is_reducing(collective::allreduce) && is_reducing(collective::reduce_scatter) &&
              is_reducing(collective::reduce));
static_assert(!is_reducing(collective::allgather) && !is_reducing(collective::barrier));
static_assert(detail::implements<collective::broadcast, algorithm::tree, ctx>);
static_assert(!detail::implements<collective::allgather, algorithm::tree, ctx>);
}  // namespace

TEST_CASE("one row drives the descriptor: reduce_scatter carries recv's count, alltoall a block") {
  std::vector<float> in(12), out(4);
  detail::call_arguments a{const_tensor_view(std::span(in)), tensor_view(std::span(out)), op::max, -1};
  auto d = detail::describe<collective::reduce_scatter>(a, 3);
  CHECK(d.count == 4);
  CHECK(d.reduction == static_cast<std::uint8_t>(op::max));
  CHECK(d.root == -1);
  d = detail::describe<collective::alltoall>(a, 3);
  CHECK(d.count == 4);
  CHECK(d.reduction == static_cast<std::uint8_t>(op::sum));  // not a reducing collective
  d = detail::describe<collective::barrier>({}, 3);
  CHECK(d.count == 0);
  CHECK(d.type == static_cast<std::uint8_t>(dtype::u8));
}

TEST_CASE("the count rules and in-place layouts of the table, worded in the caller's units") {
  std::vector<float> big(12), small(4);
  constexpr auto rs = collective::reduce_scatter;
  detail::call_arguments a{const_tensor_view(std::span(small)), tensor_view(std::span(small)), op::sum, -1};
  auto d = detail::describe<rs>(a, 3);
  CHECK(detail::check_shape<rs>(d, a, 0, 3) == "send has 4 elements but must have world_size (3) x recv count (4)");
  // reduce_scatter in place: out is this rank's block of in; any other overlap is refused.
  a = {const_tensor_view(std::span(big)), tensor_view(big.data() + 4, 4, dtype::f32), op::sum, -1};
  std::string bad;
  detail::check_aliasing<rs>(a, 1, bad);
  CHECK(bad.empty());
  detail::check_aliasing<rs>(a, 2, bad);
  CHECK(bad == "send and recv buffers overlap without being the in-place layout");
  // broadcast reads in on root only: elsewhere its count is not compared.
  constexpr auto bc = collective::broadcast;
  a = {const_tensor_view(std::span(big)), tensor_view(std::span(small)), op::sum, 0};
  d = detail::describe<bc>(a, 3);
  CHECK(detail::check_shape<bc>(d, a, 1, 3).empty());
  CHECK(detail::check_shape<bc>(d, a, 0, 3) == "root's send has 12 elements but recv has 4");
}

TEST_CASE("the codec's tag in the descriptor: its name and parameter, as std::to_string writes it, cut to 8 bytes") {
  const auto topk = detail::codec_tag<codec::topk_of<10>>();
  CHECK(std::string(topk.data(), 6) == "topk10");
  CHECK(topk[6] == '\0');
  const auto none = detail::codec_tag<codec::none>();
  CHECK(std::string(none.data()) == std::string(codec::none::name));
}
