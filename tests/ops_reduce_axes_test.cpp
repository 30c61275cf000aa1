// Every reduction of the op table over each of the 16 axis subsets of a rank-4 tensor, element by element
// against the entry's long-double reference; without keepdims here, with it in ops_reduce_keepdims_test.
#include "reduce_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

TEST_CASE("reductions over every axis subset of a rank-4 tensor", "[ops][reduce][axes]") {
  ops::reduction_ops::for_each([]<class Op>() { axis_subsets<Op, false>(); });
}

TEST_CASE("an empty axis list reduces every axis, negative axes count from the end", "[ops][reduce][axes]") {
  Tensor<float, rank4_shape> x;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : x) v = u(rng);
  Tensor<float, shape<>> all = sum(x, axes<>), all15 = reduce_mask<ops::sum, 15, false>(x);
  CHECK(all() == all15());
  Tensor<float, shape<3, 4>> neg = sum(x, axes<-1, -3>), pos = sum(x, axes<1, 3>);
  for (index_t i = 0; i < 12; ++i) CHECK(neg.data()[i] == pos.data()[i]);
}

TEST_CASE("per-channel sums over many rows read as flat runs: the long-double sums, and the bits of each block's order", "[ops][reduce][axes]") {
  // [5, 30, 20, 16] (3000 rows of one channel vector, three 1024-row blocks), summed over the first three
  // axes as batch norm does in NHWC: the operand a product with a per-channel scale (periodic) and a
  // per-image mask (constant from axis 1 on), the kernel's fast path for both.
  constexpr index_t N = 5, H = 30, W = 20, C = 16;
  Tensor<float, shape<N, H, W, C>> x;
  Tensor<float, shape<C>> scale;
  Tensor<float, shape<N>> mask{1.0f, 0.0f, 1.0f, 1.0f, 0.5f};
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : x) v = u(rng);
  for (float& v : scale) v = u(rng);
  const Tensor<float, shape<C>> s = sum(x * scale * reshape<N, 1, 1, 1>(mask), axes<0, 1, 2>);
  for (index_t c = 0; c < C; ++c) {
    // in the kernel's order: each 1024-row block from zero, row by row, then the blocks in order
    long double exact = 0;
    float blocks = 0;
    for (index_t b = 0; b * 1024 < N * H * W; ++b) {
      float part = 0;
      for (index_t r = b * 1024; r < std::min<index_t>(N * H * W, (b + 1) * 1024); ++r) {
        const index_t n = r / (H * W);
        volatile float v = x.data()[r * C + c] * scale(c); // (volatile: no fused multiply-add across the two steps)
        v = v * mask(n);
        part += v;
        exact += static_cast<long double>(x.data()[r * C + c]) * scale(c) * mask(n);
      }
      blocks += part;
    }
    CHECK(s(c) == blocks);
    CHECK(static_cast<long double>(s(c)) == Approx(static_cast<double>(exact)).margin(1e-4));
  }
}
