// max_pool2d over a grid of parameters against long-double loops written from PyTorch's definitions
// (pool_test_support.hpp): kernel {1, 2, 3, 3x2}, stride {1, 2, 3}, padding {0, 1}, dilation {1, 2},
// ceil_mode both. Each case also varies the image (7x9 or 5x5), the layout (NCHW, NHWC), the element
// type (f32, f64) and batch/channels ({1, 3}) by bits of a hash of its index: every value of each is
// covered without instantiating the full product. (avg_pool2d: pool_avg_test.cpp; one file each keeps
// each translation unit near a minute to compile.)
#include "pool_test_support.hpp"

#include <random>
#include <utility>

using namespace pool_test;

namespace {
constexpr hw kernels[] = {hw{1}, hw{2}, hw{3}, hw{3, 2}};

constexpr std::uint32_t mix(int i) { return std::uint32_t(i + 1) * 2654435761u >> 11; }

template <class T, class L, index_t N, index_t C, index_t H, index_t W, hw K, hw St, hw P, hw D, bool Ceil>
void check_max_case([[maybe_unused]] int id) {
  [[maybe_unused]] const geom g{K.h, K.w, St.h, St.w, P.h, P.w, D.h, D.w, Ceil};
  // (Arguments PyTorch refuses are compile errors here: tests/compile_fail/pool_*.)
  if constexpr (torch_out_ok(H, W, K, St, P, D, Ceil)) {
    const index_t oh = torch_out(H, g.kh, g.sh, g.ph, g.dh, Ceil), ow = torch_out(W, g.kw, g.sw, g.pw, g.dw, Ceil);
    image<T, L, N, C, H, W> x{std::uint32_t(id)};
    auto e = max_pool2d<K, St, P, D, Ceil>(x.t, L{});
    using O = typename decltype(e)::shape_type;
    Tensor<T, O> y = e;
    constexpr int h = std::is_same_v<L, nhwc_t> ? 1 : 2;
    INFO("max case " << id << ": k " << g.kh << "x" << g.kw << " s " << g.sh << " p " << g.ph << " d " << g.dh << " ceil " << Ceil
                     << " image " << N << "x" << C << "x" << H << "x" << W << (h == 1 ? " nhwc " : " nchw ") << sizeof(T) * 8);
    REQUIRE(O::dims[h] == oh);
    REQUIRE(O::dims[h + 1] == ow);
    int bad = 0;
    for (index_t n = 0; n < N; ++n)
      for (index_t c = 0; c < C; ++c)
        for (index_t i = 0; i < oh; ++i)
          for (index_t j = 0; j < ow; ++j) bad += pooled<L>(y, n, c, i, j) != static_cast<T>(ref_max(x, n, c, i, j, g, H, W));
    CHECK(bad == 0);
  }
}

// Case I: the parameters from its digits, the rest from a hash of I.
template <int I>
void max_case() {
  constexpr int k = I % 4, s = I / 4 % 3, p = I / 12 % 2, d = I / 24 % 2, c = I / 48 % 2;
  constexpr std::uint32_t m = mix(I);
  using T = std::conditional_t<(m & 1) != 0, double, float>;
  using L = std::conditional_t<(m & 2) != 0, nhwc_t, nchw_t>;
  constexpr index_t N = (m & 4) ? 3 : 1, C = (m & 8) ? 3 : 1, H = (m & 16) ? 7 : 5, W = (m & 16) ? 9 : 5;
  check_max_case<T, L, N, C, H, W, kernels[k], hw{s + 1}, hw{p}, hw{d + 1}, c == 1>(I);
}
} // namespace

TEST_CASE("max_pool2d over the parameter grid equals the long-double loops", "[pool]") {
  []<int... I>(std::integer_sequence<int, I...>) { (max_case<I>(), ...); }(std::make_integer_sequence<int, 96>{});
}

// Rows at least one SIMD vector long take the vectorised window rows (cpu/window_rows.hpp): outputs along
// OW (NCHW) or C (NHWC) as lanes, padded rows, a last vector overlapping the one before.
TEST_CASE("max_pool2d on wide rows (the vectorised path) equals the long-double loops", "[pool]") {
  check_max_case<float, nchw_t, 2, 3, 9, 41, hw{3}, hw{2}, hw{1}, hw{1}, false>(1001);     // OW 21, padded
  check_max_case<float, nchw_t, 1, 2, 6, 45, hw{2}, hw{1}, hw{1}, hw{2}, true>(1002);      // OW 44, dilated
  check_max_case<float, nchw_t, 1, 2, 7, 50, hw{3, 2}, hw{3}, hw{0}, hw{1}, true>(1003);   // stride 3, ceil
  check_max_case<double, nchw_t, 1, 3, 8, 37, hw{3}, hw{2}, hw{1}, hw{1}, true>(1004);     // f64: 8 lanes
  check_max_case<float, nhwc_t, 2, 35, 9, 11, hw{3}, hw{2}, hw{1}, hw{1}, false>(1005);    // C = 35 lanes
  check_max_case<double, nhwc_t, 1, 17, 7, 9, hw{2}, hw{1}, hw{1}, hw{2}, true>(1006);
}

// A keepdims reduction over trailing window axes at the root (max pooling's tie count in its gradient,
// sum(x == max, window, keepdims)) is evaluated as the plain reduction into the destination without its
// unit axes: the window rows above. Against loops, into a Tensor and into a strided view.
TEST_CASE("keepdims reductions over trailing window axes at the root equal the loops", "[pool]") {
  constexpr index_t A = 2, B = 3, C = 37, KH = 2, KW = 3;
  Tensor<float, shape<A, B, C, KH, KW>> x;
  std::mt19937 rng(77);
  std::uniform_int_distribution<int> u(-3, 3); // small whole numbers: ties, exact sums
  for (index_t i = 0; i < x.size(); ++i) x.data()[i] = float(u(rng));
  Tensor<float, shape<A, B, C, 1, 1>> m = max(x, axes<3, 4>, keepdims);
  Tensor<float, shape<A, B, C, 1, 1>> ties = sum(where(eq(x, broadcast_to<shape<A, B, C, KH, KW>>(m)), 1.0f, 0.0f), axes<3, 4>, keepdims);
  Tensor<float, shape<A, B, 2 * C, 1, 1>> wide = full<float, shape<A, B, 2 * C, 1, 1>>(0.0f);
  eval(slice<whole, whole, range<0, 2 * C, 2>, whole, whole>(wide), sum(x, axes<3, 4>, keepdims));
  for (index_t a = 0; a < A; ++a)
    for (index_t b = 0; b < B; ++b)
      for (index_t c = 0; c < C; ++c) {
        float mx = -INFINITY, s = 0;
        for (index_t i = 0; i < KH; ++i)
          for (index_t j = 0; j < KW; ++j) mx = std::max(mx, x(a, b, c, i, j)), s += x(a, b, c, i, j);
        float t = 0;
        for (index_t i = 0; i < KH; ++i)
          for (index_t j = 0; j < KW; ++j) t += x(a, b, c, i, j) == mx;
        INFO(a << ", " << b << ", " << c);
        REQUIRE(m(a, b, c, 0, 0) == mx);
        REQUIRE(ties(a, b, c, 0, 0) == t);
        REQUIRE(wide(a, b, 2 * c, 0, 0) == s);
        REQUIRE(wide(a, b, 2 * c + 1, 0, 0) == 0.0f);
      }
}
