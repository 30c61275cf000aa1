// max_pool2d over a grid of parameters against long-double loops written from PyTorch's definitions
// (pool_test_support.hpp): kernel {1, 2, 3, 3x2}, stride {1, 2, 3}, padding {0, 1}, dilation {1, 2},
// ceil_mode both. Each case also varies the image (7x9 or 5x5), the layout (NCHW, NHWC), the element
// type (f32, f64) and batch/channels ({1, 3}) by bits of a hash of its index: every value of each is
// covered without instantiating the full product. (avg_pool2d: pool_avg_test.cpp; one file each keeps
// each translation unit near a minute to compile.)
#include "pool_test_support.hpp"

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
