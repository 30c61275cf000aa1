// The device draws the same random streams as the CPU: element i depends only on (seed, offset, i).
#include "cuda_test_support.hpp"

#include <cstring>

using namespace tenfold;

TEST_CASE("uniform, normal and bernoulli draws on the device match the CPU") {
  TENFOLD_REQUIRE_DEVICE();
  using S = shape<33, 257>;
  rng cpu_gen(1234), dev_gen(1234);
  const Tensor<float, S> u = uniform<S>(cpu_gen, -2.0f, 3.0f);
  const Tensor<float, S> n = normal<S>(cpu_gen);
  const Tensor<bool, S> b = bernoulli<S>(cpu_gen, 0.3);
  cuda::Tensor<float, S> du, dn;
  cuda::Tensor<bool, S> db;
  du = uniform<S>(dev_gen, -2.0f, 3.0f);
  dn = normal<S>(dev_gen);
  db = bernoulli<S>(dev_gen, 0.3);
  CHECK(cpu_gen.offset() == dev_gen.offset());
  const Tensor<float, S> gu = cuda::to_host(du), gn = cuda::to_host(dn);
  const Tensor<bool, S> gb = cuda::to_host(db);
  // Uniform and Bernoulli are integer arithmetic and correctly rounded operations: bit for bit.
  CHECK(std::memcmp(u.data(), gu.data(), sizeof(float) * S::size) == 0);
  CHECK(std::memcmp(b.data(), gb.data(), sizeof(bool) * S::size) == 0);
  // Normal goes through log, sqrt and cos, whose last bits differ between glibc and CUDA's libm.
  double worst = 0;
  for (index_t i = 0; i < S::size; ++i) worst = std::max(worst, test::ulps_apart<float>(n.data()[i], gn.data()[i]));
  INFO("normal: worst " << worst << " ulps");
  CHECK(worst <= 16);
}
