#pragma once
// Pooling as plain expressions: a reduction over the innermost (window) axes of a sliding-window view
// (core/windows.hpp). Nothing is copied and no window buffer exists: an unpadded pool of a tensor is
// a reduction over a leaf with window strides; with padding the windows are a view of a pad node.
// The reduction's innermost axes are reduced, so it is fused where it is read (plan/fusion.hpp):
// relu(max_pool2d(x)) and max_pool2d(relu(x)) are each one loop nest.
//
// Semantics follow PyTorch (torch.nn.functional.max_pool2d / avg_pool2d / adaptive_avg_pool2d):
//  - output extent: floor((n + 2p - d(k-1) - 1) / s) + 1, or ceil(...) + 1 with ceil_mode, where a
//    last window that would start in the right padding is dropped;
//  - max pools over -inf padding (NaN propagates); avg pools over zero padding and divides by the
//    window clipped to the padded input (count_include_pad) or to the input itself;
//  - padding at most half the kernel; adaptive windows run from floor(i n / o) to ceil((i + 1) n / o).
#include <limits>

#include "tenfold/core/views_compose.hpp"
#include "tenfold/core/windows.hpp"
#include "tenfold/ops/api.hpp"

namespace tenfold {
namespace detail {

// One spatial axis of a pool: output extent, and the padding to read (before = p; after = what the
// last window needs beyond the input, at most p, more in ceil mode).
struct pool_axis {
  index_t out = 0, before = 0, after = 0;
};
constexpr pool_axis pool_geometry(index_t n, index_t k, index_t s, index_t p, index_t d, bool ceil_mode) {
  const index_t span = d * (k - 1) + 1, num = n + 2 * p - span;
  if (num < 0 || s < 1) return {};
  index_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  if (ceil_mode && (o - 1) * s >= n + p) --o; // PyTorch: the last window must start inside the input or left padding
  const index_t need = (o - 1) * s + span - p - n;
  return {o, p, need > 0 ? need : 0};
}

template <class S, class L, hw K, hw St, hw P, hw D, bool Ceil>
struct check_pool {
  static constexpr bool rank_ok = S::rank >= 3;
  static constexpr int h = rank_ok ? spatial_axis<S, L> : 0;
  static constexpr bool params_ok = K.h >= 1 && K.w >= 1 && St.h >= 1 && St.w >= 1 && D.h >= 1 && D.w >= 1 && P.h >= 0 && P.w >= 0;
  static constexpr bool pad_ok = P.h <= K.h / 2 && P.w <= K.w / 2;
  static constexpr pool_axis gh = rank_ok && params_ok ? pool_geometry(S::dims[h], K.h, St.h, P.h, D.h, Ceil) : pool_axis{};
  static constexpr pool_axis gw = rank_ok && params_ok ? pool_geometry(S::dims[h + 1], K.w, St.w, P.w, D.w, Ceil) : pool_axis{};
  static constexpr bool fits = !rank_ok || !params_ok || (gh.out >= 1 && gw.out >= 1);
  static_assert(rank_ok, "tenfold: pooling needs a channel axis and two spatial axes (rank >= 3: [N,] C, H, W or [N,] H, W, C)");
  static_assert(params_ok, "tenfold: pooling: kernel, stride and dilation must be at least 1, padding non-negative");
  static_assert(pad_ok, "tenfold: pooling: padding must be at most half the kernel size (as in PyTorch)");
  static_assert(fits, "tenfold: pooling: the (dilated) kernel is larger than the padded input");
  static constexpr bool valid = rank_ok && params_ok && pad_ok && fits;
};

// The pad of a rank-R node on the two spatial axes only: {before, after} per axis.
template <class S, int H, pool_axis GH, pool_axis GW>
constexpr std::array<index_t, 2 * S::rank> spatial_pads() {
  std::array<index_t, 2 * S::rank> p{};
  p[2 * H] = GH.before, p[2 * H + 1] = GH.after;
  p[2 * (H + 1)] = GW.before, p[2 * (H + 1) + 1] = GW.after;
  return p;
}

// The windows of a pool, over `fill` padding where the geometry needs any (a pad node, whose view stays a
// view_node), else straight over the operand (strides only).
template <class L, class C, hw K, hw St, hw D, class N, class T>
auto pool_windows(N&& node, T fill) {
  using S = typename std::remove_cvref_t<N>::shape_type;
  constexpr int h = C::h;
  constexpr pool_axis gh = C::gh, gw = C::gw;
  if constexpr (gh.before + gh.after + gw.before + gw.after == 0) {
    return windows_of<L, gh.out, gw.out, K, St, D>(std::forward<N>(node));
  } else {
    using V = std::remove_cvref_t<N>;
    auto padded = pad_node<V, canon(spatial_pads<S, h, gh, gw>())>{{}, std::forward<N>(node), fill};
    return windows_of<L, gh.out, gw.out, K, St, D>(std::move(padded));
  }
}

// Per-axis count of the elements an average pool divides by (PyTorch's avg_pool2d): the window clipped
// to the padded input, and, without count_include_pad, to the input.
TENFOLD_HD constexpr index_t avg_pool_count(index_t o, index_t n, index_t k, index_t s, index_t p, bool include_pad) {
  index_t start = o * s - p, end = start + k;
  if (end > n + p) end = n + p;
  if (include_pad) return end - start;
  if (start < 0) start = 0;
  if (end > n) end = n;
  return end - start;
}
constexpr bool avg_pool_uniform(index_t outs, index_t n, index_t k, index_t s, index_t p, bool include_pad) {
  for (index_t o = 0; o < outs; ++o)
    if (avg_pool_count(o, n, k, s, p, include_pad) != k) return false;
  return true;
}
// Adaptive windows: [floor(o n / outs), ceil((o + 1) n / outs)).
TENFOLD_HD constexpr index_t adaptive_start(index_t o, index_t n, index_t outs) { return o * n / outs; }
TENFOLD_HD constexpr index_t adaptive_count(index_t o, index_t n, index_t outs) {
  return ((o + 1) * n + outs - 1) / outs - o * n / outs;
}
constexpr index_t adaptive_max_count(index_t n, index_t outs) {
  index_t m = 0;
  for (index_t o = 0; o < outs; ++o) m = adaptive_count(o, n, outs) > m ? adaptive_count(o, n, outs) : m;
  return m;
}

// The divisor of each output of an average pool: a generator over the output shape (axis `h` and
// h + 1 are the window positions).
struct avg_pool_divisor {
  static constexpr const char* name = "avg_pool_divisor";
  int h;
  index_t n_h, n_w, k_h, k_w, s_h, s_w, p_h, p_w;
  bool include_pad, adaptive; // adaptive: n_* and k_* are the input and output extents
  TENFOLD_HD index_t operator()(const index_t* i) const {
    if (adaptive) return adaptive_count(i[h], n_h, k_h) * adaptive_count(i[h + 1], n_w, k_w);
    return avg_pool_count(i[h], n_h, k_h, s_h, p_h, include_pad) * avg_pool_count(i[h + 1], n_w, k_w, s_w, p_w, include_pad);
  }
};

// Adaptive windows padded to the largest window: out [.., oh, ow, .., kh, kw] reads
// in [.., start(oh) + kh, start(ow) + kw, ..], clamped to the input (the mask below hides those reads).
// A non-linear index map (start is floor(oh n / outs)), so a view of a leaf stays a view_node.
template <class In, class Out, class L>
struct adaptive_window_map {
  using in_shape = In;
  using out_shape = Out;
  static constexpr int h = spatial_axis<In, L>;
  TENFOLD_HD static constexpr void map(const index_t* out, index_t* in) {
    for (int j = 0; j < In::rank; ++j) in[j] = out[j];
    const index_t nh = extent<In>(h), nw = extent<In>(h + 1);
    const index_t ih = adaptive_start(out[h], nh, extent<Out>(h)) + out[In::rank];
    const index_t iw = adaptive_start(out[h + 1], nw, extent<Out>(h + 1)) + out[In::rank + 1];
    in[h] = ih < nh ? ih : nh - 1;
    in[h + 1] = iw < nw ? iw : nw - 1;
  }
};
// True where (kh, kw) lies inside the adaptive window of (oh, ow).
struct adaptive_window_mask {
  static constexpr const char* name = "adaptive_window_mask";
  int h, k;
  index_t n_h, n_w, o_h, o_w;
  TENFOLD_HD bool operator()(const index_t* i) const {
    return i[k] < adaptive_count(i[h], n_h, o_h) && i[k + 1] < adaptive_count(i[h + 1], n_w, o_w);
  }
};

template <class T>
constexpr compute_t<T> lowest_for_max() {
  if constexpr (std::numeric_limits<compute_t<T>>::has_infinity) return -std::numeric_limits<compute_t<T>>::infinity();
  else return std::numeric_limits<compute_t<T>>::lowest();
}
template <class T>
struct check_floating_pool {
  static_assert(is_floating_v<T>, "tenfold: avg_pool2d / adaptive_avg_pool2d need a floating-point input");
  static constexpr bool valid = is_floating_v<T>;
};
} // namespace detail

// max_pool2d<kernel, stride = kernel, padding = 0, dilation = 1, ceil_mode = false>(x, nchw | nhwc)
// x: [N, C, H, W] (or [C, H, W]) with nchw, [N, H, W, C] (or [H, W, C]) with nhwc; each parameter is
// one number for both spatial axes or hw{h, w}.
template <hw K, hw St = K, hw P = 0, hw D = 1, bool Ceil = false, expression X, image_layout L = nchw_t>
auto max_pool2d(X&& x, L = {}) {
  using S = detail::shape_of_t<X>;
  using C = detail::check_pool<S, L, K, St, P, D, Ceil>;
  if constexpr (!C::valid) return detail::invalid_view{};
  else {
    using T = typename detail::node_t<X>::value_type;
    auto w = detail::pool_windows<L, C, K, St, D>(detail::as_node(std::forward<X>(x)), detail::lowest_for_max<T>());
    return max(std::move(w), axes<-2, -1>);
  }
}

// avg_pool2d<kernel, stride = kernel, padding = 0, ceil_mode = false, count_include_pad = true>(x, layout)
template <hw K, hw St = K, hw P = 0, bool Ceil = false, bool CountIncludePad = true, expression X, image_layout L = nchw_t>
auto avg_pool2d(X&& x, L = {}) {
  using S = detail::shape_of_t<X>;
  using C = detail::check_pool<S, L, K, St, P, hw{1}, Ceil>;
  using T = typename detail::node_t<X>::value_type;
  if constexpr (!C::valid || !detail::check_floating_pool<T>::valid) return detail::invalid_view{};
  else {
    auto w = detail::pool_windows<L, C, K, St, hw{1}>(detail::as_node(std::forward<X>(x)), compute_t<T>(0));
    constexpr int h = C::h;
    if constexpr (detail::avg_pool_uniform(C::gh.out, S::dims[h], K.h, St.h, P.h, CountIncludePad) &&
                  detail::avg_pool_uniform(C::gw.out, S::dims[h + 1], K.w, St.w, P.w, CountIncludePad)) {
      return mean(std::move(w), axes<-2, -1>); // every window counts kh * kw elements
    } else {
      using Out = typename decltype(sum(std::move(w), axes<-2, -1>))::shape_type;
      const detail::avg_pool_divisor div{h, S::dims[h], S::dims[h + 1], K.h, K.w, St.h, St.w, P.h, P.w, CountIncludePad, false};
      return sum(std::move(w), axes<-2, -1>) / detail::generator_node<T, Out, detail::avg_pool_divisor>{{}, div};
    }
  }
}

// adaptive_avg_pool2d<OH, OW>(x, layout): output OH x OW, window i over [floor(i H / OH), ceil((i + 1) H / OH)).
// Uniform windows (H % OH == 0 and W % OW == 0) are an avg_pool2d (a mean over strided windows; OH =
// OW = 1 is the mean over H and W). Otherwise the windows differ in start and size: each is read as the
// largest window from its start (an index map that is not linear, so element by element), masked to
// its own extent and divided by its size; still one loop nest, no buffer.
template <index_t OH, index_t OW = OH, expression X, image_layout L = nchw_t>
auto adaptive_avg_pool2d(X&& x, L layout = {}) {
  using S = detail::shape_of_t<X>;
  static_assert(S::rank >= 3, "tenfold::adaptive_avg_pool2d: the input needs a channel axis and two spatial axes (rank >= 3)");
  constexpr int h = S::rank >= 3 ? detail::spatial_axis<S, L> : 0;
  constexpr index_t H = S::dims[h], W = S::dims[h + 1];
  static_assert(OH >= 1 && OW >= 1, "tenfold::adaptive_avg_pool2d: the output extents must be at least 1");
  using T = typename detail::node_t<X>::value_type;
  if constexpr (S::rank < 3 || OH < 1 || OW < 1 || !detail::check_floating_pool<T>::valid) return detail::invalid_view{};
  else if constexpr (H % OH == 0 && W % OW == 0) {
    return avg_pool2d<hw{H / OH, W / OW}>(std::forward<X>(x), layout);
  } else {
    constexpr index_t KH = detail::adaptive_max_count(H, OH), KW = detail::adaptive_max_count(W, OW);
    using Out = shape_from<detail::windows_dims<S, h, OH, OW, hw{KH, KW}>()>;
    using Map = detail::adaptive_window_map<S, Out, L>;
    auto w = detail::apply_view<Map>(detail::as_node(std::forward<X>(x)));
    const auto mask = detail::generator_node<bool, Out, detail::adaptive_window_mask>{{}, {h, S::rank, H, W, OH, OW}};
    auto sums = sum(where(mask, std::move(w), compute_t<T>(0)), axes<-2, -1>);
    using R = typename decltype(sums)::shape_type;
    const detail::avg_pool_divisor div{h, H, W, OH, OW, 1, 1, 0, 0, true, true};
    return std::move(sums) / detail::generator_node<T, R, detail::avg_pool_divisor>{{}, div};
  }
}

// Global average pooling: the mean over the two spatial axes, [N, C, H, W] -> [N, C] (or [N, H, W, C] -> [N, C]).
template <expression X, image_layout L = nchw_t>
auto global_avg_pool2d(X&& x, L = {}) {
  using S = detail::shape_of_t<X>;
  static_assert(S::rank >= 3, "tenfold::global_avg_pool2d: the input needs a channel axis and two spatial axes (rank >= 3)");
  constexpr int h = S::rank >= 3 ? detail::spatial_axis<S, L> : 0;
  return mean(std::forward<X>(x), axes<h, h + 1>);
}
} // namespace tenfold
