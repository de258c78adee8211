//! @file host_test.cpp  transport::nccl and algorithm::native without a GPU: NCCL's result codes as
//! tutti errors, the dtype/op tables, the ncclUniqueId exchange through a store (NCCL's real
//! ncclGetUniqueId, which needs no GPU), device choice, the refusal to start without a device, and
//! that communicator<transport::nccl, algorithm::native> composes.
#include <doctest/doctest.h>

#if TUTTI_HAVE_NCCL
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <tutti/algorithm/native.hpp>
#include <tutti/algorithm/ring.hpp>
#include <tutti/bootstrap/inproc_store.hpp>
#include <tutti/communicator.hpp>
#include <tutti/transport/nccl.hpp>

namespace {

using namespace std::chrono_literals;
using tutti::deadline;
using tutti::dtype;
using tutti::op;
using tutti::bootstrap::inproc_store;
namespace nd = tutti::transport::nccl_detail;

using comm_t = tutti::communicator<tutti::transport::nccl, tutti::algorithm::native>;
using native_context = tutti::algorithm::context<tutti::transport::nccl>;

// ---- composition, at compile time ---------------------------------------------------------------
static_assert(tutti::transport_policy<tutti::transport::nccl>);
static_assert(tutti::transport::nccl::traits.device_memory && !tutti::transport::nccl::traits.one_sided);
static_assert(tutti::algorithm_policy<tutti::algorithm::native>);
static_assert(tutti::device_memory_algorithm<tutti::algorithm::native>);
static_assert(!tutti::device_memory_algorithm<tutti::algorithm::ring>);
static_assert(tutti::checks_arguments<tutti::algorithm::native, native_context>);
static_assert(tutti::has_allreduce<tutti::algorithm::native, native_context> &&
              tutti::has_reduce_scatter<tutti::algorithm::native, native_context> &&
              tutti::has_allgather<tutti::algorithm::native, native_context> &&
              tutti::has_broadcast<tutti::algorithm::native, native_context> &&
              tutti::has_reduce<tutti::algorithm::native, native_context> &&
              tutti::has_alltoall<tutti::algorithm::native, native_context> &&
              tutti::has_barrier<tutti::algorithm::native, native_context>);
static_assert(std::is_same_v<comm_t::transport_type, tutti::transport::nccl>);
static_assert(std::is_same_v<comm_t::algorithm_type, tutti::algorithm::native>);

//! Instantiates every collective of the communicator (never called: there is no GPU here).
[[maybe_unused]] void instantiate_every_collective(comm_t& c, float* p, std::size_t n) {
  const auto all = tutti::tensor_view(std::span(p, n));
  const auto part = tutti::tensor_view(std::span(p, n / 2));
  c.allreduce(all, op::sum);
  c.reduce_scatter(tutti::const_tensor_view(all), part, op::avg);
  c.allgather(tutti::const_tensor_view(part), all);
  c.broadcast(all, 0);
  c.reduce(all, op::max, 0);
  c.alltoall(all);
  c.barrier();
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "nothing thrown";
}

}  // namespace

// ---- errors --------------------------------------------------------------------------------------
TEST_CASE("nccl errors: what each result code means") {
  CHECK(nd::classify(ncclSuccess) == nd::failure::none);
  CHECK(nd::classify(ncclInProgress) == nd::failure::in_progress);
  CHECK(nd::classify(ncclRemoteError) == nd::failure::peer_lost);
  for (auto r : {ncclUnhandledCudaError, ncclSystemError, ncclInternalError, ncclInvalidArgument, ncclInvalidUsage})
    CHECK(nd::classify(r) == nd::failure::error);
  CHECK(nd::function_name("ncclAllReduce(in, out, count, type, redop, comm, s)") == "ncclAllReduce");
  CHECK(nd::function_name("cudaEventQuery") == "cudaEventQuery");
}

TEST_CASE("nccl errors: success and in-progress pass; failures name rank, what and the call") {
  CHECK(nd::check(ncclSuccess, 3, "allreduce", "ncclAllReduce(a)") == ncclSuccess);
  CHECK(nd::check(ncclInProgress, 3, "allreduce", "ncclAllReduce(a)") == ncclInProgress);
  CHECK_THROWS_WITH_AS(nd::check(ncclUnhandledCudaError, 3, "allreduce", "ncclAllReduce(in, out, n)"),
                       doctest::Contains("rank 3: transport::nccl allreduce: ncclAllReduce: unhandled cuda error"),
                       tutti::transport_error);
  CHECK_THROWS_WITH_AS(nd::check(ncclInvalidUsage, 0, "send/recv", "ncclGroupEnd()"),
                       doctest::Contains("rank 0: transport::nccl send/recv: ncclGroupEnd: invalid usage"),
                       tutti::transport_error);
  CHECK_THROWS_WITH_AS(nd::check(cudaErrorInsufficientDriver, 1, "setup", "cudaStreamCreateWithFlags(&s, f)"),
                       "rank 1: transport::nccl setup: cudaStreamCreateWithFlags: cudaErrorInsufficientDriver "
                       "(CUDA driver version is insufficient for CUDA runtime version)",
                       tutti::transport_error);
  CHECK(nd::check(cudaSuccess, 1, "setup", "cudaFree(p)") == cudaSuccess);
}

TEST_CASE("nccl errors: ncclRemoteError is peer_lost, naming the peer where it is known") {
  try {
    nd::raise(ncclRemoteError, 2, "recv", "ncclCommGetAsyncError", 5);
    FAIL("nothing thrown");
  } catch (const tutti::peer_lost& e) {
    CHECK(e.peer() == 5);
    CHECK(contains(e.what(), "rank 2: transport::nccl recv: ncclCommGetAsyncError: remote process exited"));
    CHECK(contains(e.what(), "(rank 5 is lost)"));
  }
  try {
    nd::check(ncclRemoteError, 2, "allreduce", "ncclAllReduce(x)");
    FAIL("nothing thrown");
  } catch (const tutti::peer_lost& e) {
    CHECK(e.peer() == -1);
    CHECK(contains(e.what(), "(a peer is lost; NCCL does not say which)"));
  }
}

TEST_CASE("nccl errors: the macro names the NCCL function of a real failing call") {
  // NCCL refuses a null id pointer on any machine, GPU or not.
  CHECK_THROWS_WITH_AS(TUTTI_NCCL_CHECK(4, "bootstrap", ncclGetUniqueId(nullptr)),
                       doctest::Contains("rank 4: transport::nccl bootstrap: ncclGetUniqueId: invalid argument"),
                       tutti::transport_error);
}

// ---- dtype and op tables ------------------------------------------------------------------------------
TEST_CASE("nccl types: every dtype but int16 has the NCCL type of the same meaning") {
  static_assert(nd::nccl_type_of(dtype::f32) == ncclFloat32 && nd::nccl_type_of(dtype::bf16) == ncclBfloat16);
  static_assert(!nd::nccl_type_of(dtype::i16));
  const std::vector<std::pair<dtype, ncclDataType_t>> expected = {
      {dtype::f32, ncclFloat32}, {dtype::f64, ncclFloat64}, {dtype::f16, ncclFloat16}, {dtype::bf16, ncclBfloat16},
      {dtype::i8, ncclInt8},     {dtype::i32, ncclInt32},   {dtype::i64, ncclInt64},   {dtype::u8, ncclUint8},
      {dtype::u32, ncclUint32},  {dtype::u64, ncclUint64}};
  for (const auto& [t, n] : expected) {
    INFO(tutti::name_of(t));
    REQUIRE(nd::nccl_type_of(t).has_value());
    CHECK(*nd::nccl_type_of(t) == n);
  }
  CHECK(expected.size() + 1 == tutti::all_dtypes.size());  // int16 the only one left out
  CHECK(nd::type_table.size() == expected.size());
}

TEST_CASE("nccl types: every op maps, avg to ncclAvg") {
  CHECK(*nd::nccl_op_of(op::sum) == ncclSum);
  CHECK(*nd::nccl_op_of(op::prod) == ncclProd);
  CHECK(*nd::nccl_op_of(op::min) == ncclMin);
  CHECK(*nd::nccl_op_of(op::max) == ncclMax);
  CHECK(*nd::nccl_op_of(op::avg) == ncclAvg);
}

TEST_CASE("nccl types: the refusal is int16's alone, and names it") {
  for (dtype t : tutti::all_dtypes)
    for (op o : tutti::all_ops) {
      INFO(tutti::name_of(t) << " " << tutti::name_of(o));
      CHECK(nd::reduction_refusal(t, o).empty() == (t != dtype::i16));
    }
  CHECK(contains(nd::reduction_refusal(dtype::i16, op::sum), "dtype int16 has no NCCL type"));
}

// ---- the ncclUniqueId through a store --------------------------------------------------------------
TEST_CASE("nccl bootstrap: ranks as threads all get rank 0's real ncclUniqueId through an inproc_store") {
  inproc_store store;
  const int world = 5;
  std::vector<ncclUniqueId> ids(world);
  std::vector<std::string> errors(world);
  std::vector<std::thread> ranks;
  for (int r = world - 1; r >= 0; --r)  // rank 0 last: the others must wait for it
    ranks.emplace_back([&, r] {
      try {
        ids[static_cast<std::size_t>(r)] = nd::exchange_unique_id(r, store, "job/a", deadline::after(20s));
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : ranks) t.join();
  for (const auto& e : errors) CHECK(e.empty());
  const ncclUniqueId zero{};
  CHECK(std::memcmp(&ids[0], &zero, sizeof zero) != 0);  // NCCL filled it in
  for (int r = 1; r < world; ++r) CHECK(std::memcmp(&ids[0], &ids[static_cast<std::size_t>(r)], sizeof zero) == 0);

  // Another key prefix in the same store is another communicator: another id.
  const auto other = nd::exchange_unique_id(0, store, "job/b", deadline::after(1s));
  CHECK(std::memcmp(&ids[0], &other, sizeof other) != 0);
}

TEST_CASE("nccl bootstrap: a rank 0 that never publishes is a timeout naming the key") {
  inproc_store store;
  const auto what = message_of([&] { (void)nd::exchange_unique_id(1, store, "job/x", deadline::after(50ms)); });
  CHECK(contains(what, "rank 1: transport::nccl: rank 0 did not publish the ncclUniqueId (job/x/unique_id)"));
  CHECK_THROWS_AS((void)nd::exchange_unique_id(1, store, "job/x", deadline::after(10ms)), tutti::timeout);
}

TEST_CASE("nccl bootstrap: a key holding something else is refused") {
  inproc_store store;
  store.set("job/y/unique_id", {1, 2, 3});
  CHECK_THROWS_WITH_AS((void)nd::exchange_unique_id(2, store, "job/y", deadline::after(1s)),
                       doctest::Contains("job/y/unique_id holds 3 bytes, not an ncclUniqueId (128 bytes)"),
                       tutti::transport_error);
}

// ---- devices ------------------------------------------------------------------------------------------
TEST_CASE("nccl devices: local rank modulo the count, or TUTTI_NCCL_DEVICE") {
  const tutti::cuda::device_count_result four{4, ""};
  CHECK(nd::choose_device(0, -1, 0, four) == 0);
  CHECK(nd::choose_device(7, -1, 5, four) == 1);
  CHECK(nd::choose_device(7, 2, 5, four) == 2);
  CHECK_THROWS_WITH_AS((void)nd::choose_device(3, 4, 0, four),
                       "rank 3: transport::nccl: TUTTI_NCCL_DEVICE=4 but only 4 CUDA device(s) are visible",
                       tutti::invalid_argument);
  const tutti::cuda::device_count_result none{0, "cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device is detected)"};
  CHECK_THROWS_WITH_AS((void)nd::choose_device(1, -1, 0, none),
                       "rank 1: transport::nccl: no CUDA device to run on: cudaGetDeviceCount: cudaErrorNoDevice "
                       "(no CUDA-capable device is detected)",
                       tutti::invalid_argument);
}

TEST_CASE("nccl devices: the census says why there is none") {
  const auto census = tutti::cuda::device_count();
  CHECK(census.count >= 0);
  CHECK(census.reason.empty() == (census.count > 0));
  if (census.count == 0) CHECK(census.reason.rfind("cudaGetDeviceCount", 0) == 0);
}

TEST_CASE("nccl options: TUTTI_NCCL_DEVICE and TUTTI_NCCL_CLOSE_TIMEOUT from the environment") {
  ::setenv("TUTTI_NCCL_DEVICE", "3", 1);
  ::setenv("TUTTI_NCCL_CLOSE_TIMEOUT", "2", 1);
  const auto o = tutti::transport::nccl_options::from_env();
  CHECK(o.device == 3);
  CHECK(o.close_timeout == std::chrono::seconds(2));
  ::setenv("TUTTI_NCCL_DEVICE", "gpu0", 1);
  CHECK_THROWS_WITH_AS((void)tutti::transport::nccl_options::from_env(), doctest::Contains("TUTTI_NCCL_DEVICE='gpu0'"),
                       tutti::invalid_argument);
  ::unsetenv("TUTTI_NCCL_DEVICE");
  ::unsetenv("TUTTI_NCCL_CLOSE_TIMEOUT");
  CHECK(tutti::transport::nccl_options::from_env().device == -1);
}

TEST_CASE("nccl transport: a rank with no device to run on is refused before any NCCL call, saying why") {
  inproc_store store;
  const auto census = tutti::cuda::device_count();
  tutti::transport::nccl_options options;
  options.timeout = 2s;
  // Without a GPU: the census's reason. With GPUs: a device past the last one, refused the same way.
  if (census.count > 0) options.device = census.count;
  const auto what = message_of([&] { tutti::transport::nccl t(0, 1, store, "job/z", options); });
  CHECK(contains(what, "rank 0: transport::nccl: "));
  if (census.count == 0) CHECK(contains(what, "no CUDA device to run on: " + census.reason));
  else CHECK(contains(what, "but only " + std::to_string(census.count) + " CUDA device(s) are visible"));
  CHECK_THROWS_AS(tutti::transport::nccl(0, 1, store, "job/z", options), tutti::invalid_argument);
  CHECK_FALSE(store.check("job/z/unique_id"));  // refused before the bootstrap
  CHECK_THROWS_WITH_AS(tutti::transport::nccl(2, 2, store, "job/z", options),
                       "rank 2: transport::nccl: rank is outside [0, 2)", tutti::invalid_argument);
}

#else
TEST_CASE("nccl: not built (CUDA or NCCL not found: tutti::nccl missing)") {}
#endif
