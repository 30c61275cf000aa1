// avg_pool2d over a grid of parameters against long-double loops written from PyTorch's definitions
// (pool_test_support.hpp): kernel {1, 2, 3, 3x2}, stride {1, 2, 3}, padding {0, 1}, ceil_mode both,
// count_include_pad both. Each case also varies the image (7x9 or 5x5), the layout (NCHW, NHWC), the element
// type (f32, f64) and batch/channels ({1, 3}) by bits of a hash of its index: every value of each is
// covered without instantiating the full product. (max_pool2d: pool_max_test.cpp; one file each keeps
// each translation unit near a minute to compile.)
#include "pool_test_support.hpp"

#include <utility>

using namespace pool_test;

namespace {
constexpr hw kernels[] = {hw{1}, hw{2}, hw{3}, hw{3, 2}};

constexpr std::uint32_t mix(int i) { return std::uint32_t(i + 1) * 2654435761u >> 11; }

template <class T, class L, index_t N, index_t C, index_t H, index_t W, hw K, hw St, hw P, bool Ceil, bool Include>
void check_avg_case([[maybe_unused]] int id) {
  [[maybe_unused]] const geom g{K.h, K.w, St.h, St.w, P.h, P.w, 1, 1, Ceil};
  if constexpr (torch_out_ok(H, W, K, St, P, hw{1}, Ceil)) {
    const index_t oh = torch_out(H, g.kh, g.sh, g.ph, 1, Ceil), ow = torch_out(W, g.kw, g.sw, g.pw, 1, Ceil);
    image<T, L, N, C, H, W> x{std::uint32_t(id) + 1000};
    auto e = avg_pool2d<K, St, P, Ceil, Include>(x.t, L{});
    using O = typename decltype(e)::shape_type;
    Tensor<T, O> y = e;
    constexpr int h = std::is_same_v<L, nhwc_t> ? 1 : 2;
    INFO("avg case " << id << ": k " << g.kh << "x" << g.kw << " s " << g.sh << " p " << g.ph << " ceil " << Ceil << " include_pad "
                     << Include << " image " << N << "x" << C << "x" << H << "x" << W << (h == 1 ? " nhwc " : " nchw ") << sizeof(T) * 8);
    REQUIRE(O::dims[h] == oh);
    REQUIRE(O::dims[h + 1] == ow);
    int bad = 0;
    for (index_t n = 0; n < N; ++n)
      for (index_t c = 0; c < C; ++c)
        for (index_t i = 0; i < oh; ++i)
          for (index_t j = 0; j < ow; ++j)
            bad += !close(pooled<L>(y, n, c, i, j), ref_avg(x, n, c, i, j, g, H, W, Include), tolerance<T>);
    CHECK(bad == 0);
  }
}

// Case I: the parameters from its digits, the rest from a hash of I.
template <int I>
void avg_case() {
  constexpr int k = I % 4, s = I / 4 % 3, p = I / 12 % 2, c = I / 24 % 2, inc = I / 48 % 2;
  constexpr std::uint32_t m = mix(I + 7);
  using T = std::conditional_t<(m & 1) != 0, double, float>;
  using L = std::conditional_t<(m & 2) != 0, nhwc_t, nchw_t>;
  constexpr index_t N = (m & 4) ? 3 : 1, C = (m & 8) ? 3 : 1, H = (m & 16) ? 7 : 5, W = (m & 16) ? 9 : 5;
  check_avg_case<T, L, N, C, H, W, kernels[k], hw{s + 1}, hw{p}, c == 1, inc == 1>(I);
}
} // namespace
TEST_CASE("avg_pool2d over the parameter grid equals the long-double loops", "[pool]") {
  []<int... I>(std::integer_sequence<int, I...>) { (avg_case<I>(), ...); }(std::make_integer_sequence<int, 96>{});
}

// Rows at least one SIMD vector long take the vectorised window rows (cpu/window_rows.hpp).
TEST_CASE("avg_pool2d on wide rows (the vectorised path) equals the long-double loops", "[pool]") {
  check_avg_case<float, nchw_t, 2, 3, 9, 41, hw{3}, hw{2}, hw{1}, false, false>(1001);   // divisor per window
  check_avg_case<float, nchw_t, 1, 2, 6, 45, hw{2}, hw{1}, hw{0}, false, true>(1002);    // uniform: a mean
  check_avg_case<double, nchw_t, 1, 3, 8, 37, hw{3}, hw{2}, hw{1}, true, true>(1003);
  check_avg_case<float, nhwc_t, 2, 35, 9, 11, hw{3}, hw{2}, hw{1}, true, false>(1004);
  check_avg_case<double, nhwc_t, 1, 17, 7, 9, hw{2}, hw{2}, hw{1}, false, true>(1005);
}
