// Shared by the pooling tests: an image batch kept twice — as a tenfold tensor in either layout and as
// long doubles indexed [n][c][h][w] — and pooling references written here as PyTorch documents them,
// with plain loops, independently of the library's geometry code.
#pragma once
#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace pool_test {
using namespace tenfold;

template <class T, class L, index_t N, index_t C, index_t H, index_t W>
struct image {
  static constexpr bool channels_last = std::is_same_v<L, nhwc_t>;
  using shape_type = std::conditional_t<channels_last, shape<N, H, W, C>, shape<N, C, H, W>>;
  Tensor<T, shape_type> t;
  std::vector<long double> ref = std::vector<long double>(N * C * H * W);

  static index_t offset(index_t n, index_t c, index_t h, index_t w) {
    return channels_last ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
  }
  // Values with 12 significant bits, exact in both types (so sums of a window are exact too).
  explicit image(std::uint32_t seed) {
    std::uint32_t s = seed * 2654435761u + 12345u;
    for (index_t n = 0; n < N; ++n)
      for (index_t c = 0; c < C; ++c)
        for (index_t h = 0; h < H; ++h)
          for (index_t w = 0; w < W; ++w) set(n, c, h, w, std::ldexp(double((s = s * 1664525u + 1013904223u) >> 20), -8) - 8.0);
  }
  void set(index_t n, index_t c, index_t h, index_t w, double v) {
    t.data()[offset(n, c, h, w)] = T(v);
    ref[((n * C + c) * H + h) * W + w] = static_cast<long double>(T(v));
  }
  long double at(index_t n, index_t c, index_t h, index_t w) const { return ref[((n * C + c) * H + h) * W + w]; }
};

// Output element (n, c, oh, ow) of a pooled tensor in layout L.
template <class L, class Tn>
auto pooled(const Tn& y, index_t n, index_t c, index_t oh, index_t ow) {
  if constexpr (std::is_same_v<L, nhwc_t>) return y(n, oh, ow, c);
  else return y(n, c, oh, ow);
}

struct geom {
  index_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};
// PyTorch's pooling_output_shape: (n + 2p - d(k-1) - 1 + (ceil ? s-1 : 0)) / s + 1, then the last window
// is dropped in ceil mode if it starts in the right padding. -1 where PyTorch refuses the arguments.
constexpr index_t torch_out(index_t n, index_t k, index_t s, index_t p, index_t d, bool ceil_mode) {
  if (p > k / 2) return -1;
  const index_t num = n + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  if (num < 0) return -1;
  index_t o = num / s + 1;
  if (ceil_mode && (o - 1) * s >= n + p) --o;
  return o >= 1 ? o : -1;
}
constexpr bool torch_out_ok(index_t H, index_t W, hw k, hw s, hw p, hw d, bool ceil_mode) {
  return torch_out(H, k.h, s.h, p.h, d.h, ceil_mode) > 0 && torch_out(W, k.w, s.w, p.w, d.w, ceil_mode) > 0;
}

template <class Img>
long double ref_max(const Img& x, index_t n, index_t c, index_t oh, index_t ow, const geom& g, index_t H, index_t W) {
  long double m = -std::numeric_limits<long double>::infinity();
  for (index_t i = 0; i < g.kh; ++i)
    for (index_t j = 0; j < g.kw; ++j) {
      const index_t h = oh * g.sh - g.ph + i * g.dh, w = ow * g.sw - g.pw + j * g.dw;
      if (h < 0 || h >= H || w < 0 || w >= W) continue;
      const long double v = x.at(n, c, h, w);
      if (std::isnan(v)) return v;
      if (v > m) m = v;
    }
  return m;
}

// aten's avg_pool2d: the window is clipped to the padded input for the divisor (count_include_pad), and
// to the input for the sum (and for the divisor without count_include_pad).
template <class Img>
long double ref_avg(const Img& x, index_t n, index_t c, index_t oh, index_t ow, const geom& g, index_t H, index_t W,
                    bool include_pad) {
  index_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  index_t h1 = std::min(h0 + g.kh, H + g.ph), w1 = std::min(w0 + g.kw, W + g.pw);
  const index_t pool = (h1 - h0) * (w1 - w0);
  h0 = std::max<index_t>(h0, 0), w0 = std::max<index_t>(w0, 0), h1 = std::min(h1, H), w1 = std::min(w1, W);
  long double s = 0;
  for (index_t h = h0; h < h1; ++h)
    for (index_t w = w0; w < w1; ++w) s += x.at(n, c, h, w);
  return s / static_cast<long double>(include_pad ? pool : (h1 - h0) * (w1 - w0));
}

// |got - want| within rel * max(1, |want|); equal NaN-ness and equal infinities.
inline bool close(long double got, long double want, long double rel) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(got - want) <= rel * std::max<long double>(1, std::fabs(want));
}
template <class T>
inline constexpr long double tolerance = std::is_same_v<T, float> ? 2e-7L : 1e-15L;
} // namespace pool_test
