// dist/nccl.hpp: the NCCL communicator. Host-side parts (types, operations, messages, argument checks
// before any NCCL call) run everywhere; the collectives need a GPU and skip visibly without one.
#include "cuda_test_support.hpp"

#include <numeric>
#include <vector>

#include <tenfold/dist/nccl.hpp>

using namespace tenfold;
namespace nd = tenfold::dist::nccl_detail;
using test::check_close;

static_assert(nd::type_of<float>() == ncclFloat32 && nd::type_of<double>() == ncclFloat64);
static_assert(nd::type_of<std::int32_t>() == ncclInt32 && nd::type_of<std::int64_t>() == ncclInt64);
static_assert(nd::op_of(dist::reduce_op::sum) == ncclSum && nd::op_of(dist::reduce_op::mean) == ncclAvg);
static_assert(nd::op_of(dist::reduce_op::max) == ncclMax && nd::op_of(dist::reduce_op::min) == ncclMin);

TEST_CASE("NCCL failures become tenfold::error naming the call and NCCL's reason", "[nccl]") {
  const std::string m = nd::message("ncclAllReduce", ncclInvalidArgument);
  CHECK(m == std::string("tenfold::dist::nccl: ncclAllReduce failed: ") + ncclGetErrorString(ncclInvalidArgument));
}

TEST_CASE("a one-GPU world: every collective leaves or copies its data, bad arguments are errors", "[nccl]") {
  TENFOLD_REQUIRE_DEVICE();
  dist::nccl_communicator c(0);
  CHECK(c.rank() == 0);
  CHECK(c.size() == 1);
  using S = shape<1000>;
  const auto x = test::random_tensor<float, S>(-1, 1, 61);
  auto d = cuda::to_device(x);
  for (auto op : {dist::reduce_op::sum, dist::reduce_op::mean, dist::reduce_op::max, dist::reduce_op::min}) {
    c.allreduce(d, op);
    check_close(x, cuda::to_host(d), 0, "allreduce over one rank");
  }
  c.broadcast(d, 0);
  check_close(x, cuda::to_host(d), 0, "broadcast over one rank");
  cuda::Tensor<float, S> out;
  c.all_gather(std::span<const float>(d.data(), 1000), std::span<float>(out.data(), 1000));
  check_close(x, cuda::to_host(out), 0, "all_gather over one rank");
  c.reduce_scatter(std::span<const float>(d.data(), 1000), std::span<float>(out.data(), 1000));
  check_close(x, cuda::to_host(out), 0, "reduce_scatter over one rank");
  CHECK_THROWS_WITH(c.broadcast(d, 1), Catch::Contains("broadcast from root 1, not a rank (rank 0 of 1, device 0)"));
  CHECK_THROWS_WITH(c.all_gather(std::span<const float>(d.data(), 1000), std::span<float>(out.data(), 999)),
                    Catch::Contains("all_gather: 999 elements are not 1 blocks of 1000"));
}

TEST_CASE("every visible GPU in one process: allreduce sums and averages across them", "[nccl]") {
  TENFOLD_REQUIRE_DEVICE();
  int n = 0;
  TENFOLD_CUDA_CHECK(cudaGetDeviceCount(&n));
  std::vector<int> devices(static_cast<std::size_t>(n));
  std::iota(devices.begin(), devices.end(), 0);
  auto comms = dist::nccl_communicator::group(devices);
  REQUIRE(int(comms.size()) == n);
  using S = shape<4099>; // not a multiple of anything NCCL splits by
  std::vector<Tensor<float, S>> host;
  std::vector<cuda::Tensor<float, S>> dev;
  for (int r = 0; r < n; ++r) {
    TENFOLD_CUDA_CHECK(cudaSetDevice(r));
    host.push_back(test::random_tensor<float, S>(-1, 1, 70 + unsigned(r)));
    dev.push_back(cuda::to_device(host.back()));
  }
  Tensor<float, S> sum = host[0];
  for (int r = 1; r < n; ++r) sum = sum + host[std::size_t(r)];
  nccl_group(std::span(comms), [&](dist::nccl_communicator& c, std::size_t r) {
    return c.allreduce_start(std::span<float>(dev[r].data(), std::size_t(S::size)));
  });
  for (int r = 0; r < n; ++r) {
    TENFOLD_CUDA_CHECK(cudaSetDevice(r));
    check_close(sum, cuda::to_host(dev[std::size_t(r)]), 1e-6, "allreduce sum on device " + std::to_string(r), 1.0);
  }
  TENFOLD_CUDA_CHECK(cudaSetDevice(0));
}
