#pragma once
// Sliding windows over the two spatial axes of an image batch, as a view that never copies.
//
// windows<K, S, D>(x) of [N, C, H, W] is [N, C, OH, OW, KH, KW] with
//   out[n, c, oh, ow, kh, kw] = x[n, c, oh * SH + kh * DH, ow * SW + kw * DW],
// and of [N, H, W, C] (nhwc) it is [N, OH, OW, C, KH, KW]: the spatial axes become window positions
// and the two window axes are appended last, so a reduction over the window is over the innermost
// axes. The input axis h reads two output axes (oh and kh), so this is a linear index map, not an
// affine one; it folds into a leaf's strides like the affine views do (a leaf of strides
// (sN, sC, SH*sH, SW*sW, DH*sH, DW*sW)): no copy and no index arithmetic per element.
// Pooling (ops/pooling.hpp) is a reduction over these windows.
#include "tenfold/core/views.hpp"

namespace tenfold {

// Where the channels are: before the spatial axes (NCHW, PyTorch's default) or after them (NHWC).
// Any rank of at least 3 works: the spatial axes are the last two (nchw) or the two before the last.
struct nchw_t {
  static constexpr int spatial_from_end = 2;
};
struct nhwc_t {
  static constexpr int spatial_from_end = 3;
};
inline constexpr nchw_t nchw{};
inline constexpr nhwc_t nhwc{};
template <class L>
concept image_layout = std::is_same_v<L, nchw_t> || std::is_same_v<L, nhwc_t>;

// Two extents, height and width; one number means both: max_pool2d<3, 2>, max_pool2d<hw{3, 2}, 1>.
struct hw {
  index_t h, w;
  constexpr hw(index_t s) : h(s), w(s) {}
  constexpr hw(index_t h_, index_t w_) : h(h_), w(w_) {}
};

namespace detail {
template <class S, class L>
inline constexpr int spatial_axis = S::rank - L::spatial_from_end; // the height axis

// Output positions of a window of extent k, stride s, dilation d over n elements (no padding).
constexpr index_t window_count(index_t n, index_t k, index_t s, index_t d) {
  const index_t span = d * (k - 1) + 1;
  return n >= span && s > 0 ? (n - span) / s + 1 : 0;
}

template <class S, class L, hw K, hw St, hw D>
struct check_windows {
  static constexpr bool rank_ok = S::rank >= 3;
  static constexpr int h = rank_ok ? spatial_axis<S, L> : 0;
  static constexpr bool params_ok = K.h >= 1 && K.w >= 1 && St.h >= 1 && St.w >= 1 && D.h >= 1 && D.w >= 1;
  static constexpr bool fits = !rank_ok || !params_ok ||
                               (D.h * (K.h - 1) + 1 <= S::dims[h] && D.w * (K.w - 1) + 1 <= S::dims[h + 1]);
  static_assert(rank_ok, "tenfold::windows: the input needs a channel axis and two spatial axes (rank >= 3)");
  static_assert(params_ok, "tenfold::windows: kernel, stride and dilation must be at least 1");
  static_assert(fits, "tenfold::windows: the (dilated) kernel is larger than the input's spatial extent");
  static constexpr bool valid = rank_ok && params_ok && fits;
};

// The windows of S (height axis h) at OH x OW positions: Out = S with (oh, ow) for (h, w), then (kh, kw).
template <class S, int H, index_t OH, index_t OW, hw K>
constexpr dims_t<S::rank + 2> windows_dims() {
  dims_t<S::rank + 2> d{};
  for (int i = 0; i < S::rank; ++i) d[i] = S::dims[i];
  d[H] = OH, d[H + 1] = OW, d[S::rank] = K.h, d[S::rank + 1] = K.w;
  return d;
}
template <class S, int H, hw St, hw D>
constexpr std::array<index_t, S::rank*(S::rank + 2)> windows_coef() {
  constexpr int ro = S::rank + 2;
  std::array<index_t, S::rank * ro> c{};
  for (int j = 0; j < S::rank; ++j) c[j * ro + j] = 1;
  c[H * ro + H] = St.h, c[H * ro + S::rank] = D.h;
  c[(H + 1) * ro + H + 1] = St.w, c[(H + 1) * ro + S::rank + 1] = D.w;
  return c;
}
template <class S, int H, index_t OH, index_t OW, hw K, hw St, hw D>
using windows_map = linear_map<S, shape_from<windows_dims<S, H, OH, OW, K>()>, canon(windows_coef<S, H, St, D>()),
                               canon(std::array<index_t, S::rank>{})>;

// OH x OW windows of `node` (a node of shape S); the caller guarantees that they fit.
template <class L, index_t OH, index_t OW, hw K, hw St, hw D, class N>
auto windows_of(N&& node) {
  using S = typename std::remove_cvref_t<N>::shape_type;
  constexpr int h = spatial_axis<S, L>;
  static_assert((OH - 1) * St.h + D.h * (K.h - 1) < S::dims[h] && (OW - 1) * St.w + D.w * (K.w - 1) < S::dims[h + 1]);
  return apply_view<windows_map<S, h, OH, OW, K, St, D>>(std::forward<N>(node));
}
} // namespace detail

// windows<kernel, stride = 1, dilation = 1>(x, layout = nchw): every window position that fits in the
// input (no padding; pad first for padded windows: a view of the pad stays a view).
template <hw K, hw St = 1, hw D = 1, expression X, image_layout L = nchw_t>
auto windows(X&& x, L = {}) {
  using S = detail::shape_of_t<X>;
  using Check = detail::check_windows<S, L, K, St, D>;
  if constexpr (!Check::valid) return detail::invalid_view{};
  else {
    constexpr int h = Check::h;
    constexpr index_t oh = detail::window_count(S::dims[h], K.h, St.h, D.h);
    constexpr index_t ow = detail::window_count(S::dims[h + 1], K.w, St.w, D.w);
    return detail::windows_of<L, oh, ow, K, St, D>(detail::as_node(std::forward<X>(x)));
  }
}
} // namespace tenfold
