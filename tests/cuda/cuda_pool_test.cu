// Pooling on the device (window views folded into strides, windows of a pad, the adaptive masked sum)
// against the CPU evaluator on the same inputs; pool_test.cpp checks the CPU against long-double loops.
#include "cuda_test_support.hpp"

using namespace tenfold;

TEST_CASE("pooling on the device matches the CPU") {
  TENFOLD_REQUIRE_DEVICE();
  using S = shape<2, 3, 9, 11>;
  const auto x = test::random_tensor<float, S>(-4, 4, 21);
  const auto dx = cuda::to_device(x);
  cuda::Tensor<float, shape<2, 3, 4, 5>> m;
  m = max_pool2d<2>(dx.expr());
  test::check_close(Tensor<float, shape<2, 3, 4, 5>>(max_pool2d<2>(x)), cuda::to_host(m), 0, "max_pool2d 2x2");
  cuda::Tensor<float, shape<2, 3, 5, 6>> mp;
  mp = relu(max_pool2d<3, 2, 1>(dx.expr()));
  test::check_close(Tensor<float, shape<2, 3, 5, 6>>(relu(max_pool2d<3, 2, 1>(x))), cuda::to_host(mp), 0, "relu(max_pool2d 3x3 s2 p1)");
  cuda::Tensor<float, shape<2, 3, 5, 6>> ap;
  ap = avg_pool2d<3, 2, 1, true, false>(dx.expr());
  test::check_close(Tensor<float, shape<2, 3, 5, 6>>(avg_pool2d<3, 2, 1, true, false>(x)), cuda::to_host(ap), 1e-6, "avg_pool2d ceil, exclude pad", 4.0);
  cuda::Tensor<float, shape<2, 3, 4, 3>> ad;
  ad = adaptive_avg_pool2d<4, 3>(dx.expr());
  test::check_close(Tensor<float, shape<2, 3, 4, 3>>(adaptive_avg_pool2d<4, 3>(x)), cuda::to_host(ad), 1e-6, "adaptive_avg_pool2d 9x11 -> 4x3", 4.0);
  const auto xl = test::random_tensor<float, shape<2, 9, 11, 3>>(-4, 4, 22);
  const auto dxl = cuda::to_device(xl);
  cuda::Tensor<float, shape<2, 5, 6, 3>> ml;
  ml = max_pool2d<3, 2, 1>(dxl.expr(), nhwc);
  test::check_close(Tensor<float, shape<2, 5, 6, 3>>(max_pool2d<3, 2, 1>(xl, nhwc)), cuda::to_host(ml), 0, "max_pool2d nhwc");
}
