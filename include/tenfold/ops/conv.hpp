#pragma once
// conv2d and conv_transpose2d with compile-time parameters given as tags, in any order:
//
//   conv2d(x, w)                                          // NCHW, stride 1, no padding
//   conv2d(x, w, stride<2>, padding<1>)                   // one value for both spatial axes
//   conv2d(x, w, stride<1, 2>, dilation<2>, groups<4>, nhwc)
//   conv_transpose2d(x, w, stride<2>, padding<1>, output_padding<1>)
//
// A bias is an elementwise `+ b` (b of shape [OC, 1, 1] for NCHW, [OC] for NHWC): it and any other
// elementwise consumer (relu, a residual add) run in the GEMM's store. Layouts and weight layouts:
// core/conv_node.hpp.
#include "tenfold/core/conv_node.hpp"
#include "tenfold/core/views.hpp"

namespace tenfold {

template <index_t H, index_t W>
struct conv_stride_t {};
template <index_t H, index_t W>
struct conv_padding_t {};
template <index_t H, index_t W>
struct conv_dilation_t {};
template <index_t H, index_t W>
struct conv_output_padding_t {};
template <index_t G>
struct conv_groups_t {};
// Where the channels are. Spelled exactly as the pooling branch's core/windows.hpp spells them (the
// same tags for conv and pooling): when both are merged, keep one of the two definitions.
struct nchw_t {
  static constexpr int spatial_from_end = 2;
};
struct nhwc_t {
  static constexpr int spatial_from_end = 3;
};

template <index_t H, index_t W = H>
inline constexpr conv_stride_t<H, W> stride{};
template <index_t H, index_t W = H>
inline constexpr conv_padding_t<H, W> padding{};
template <index_t H, index_t W = H>
inline constexpr conv_dilation_t<H, W> dilation{};
template <index_t H, index_t W = H>
inline constexpr conv_output_padding_t<H, W> output_padding{};
template <index_t G>
inline constexpr conv_groups_t<G> groups{};
inline constexpr nchw_t nchw{};
inline constexpr nhwc_t nhwc{};

namespace detail {
template <index_t H, index_t W>
constexpr void set_option(conv_geometry& g, conv_stride_t<H, W>) { g.stride_h = H, g.stride_w = W; }
template <index_t H, index_t W>
constexpr void set_option(conv_geometry& g, conv_padding_t<H, W>) { g.pad_h = H, g.pad_w = W; }
template <index_t H, index_t W>
constexpr void set_option(conv_geometry& g, conv_dilation_t<H, W>) { g.dil_h = H, g.dil_w = W; }
template <index_t H, index_t W>
constexpr void set_option(conv_geometry& g, conv_output_padding_t<H, W>) { g.out_pad_h = H, g.out_pad_w = W; }
template <index_t G>
constexpr void set_option(conv_geometry& g, conv_groups_t<G>) { g.groups = G; }
constexpr void set_option(conv_geometry& g, nchw_t) { g.layout = conv_layout::nchw; }
constexpr void set_option(conv_geometry& g, nhwc_t) { g.layout = conv_layout::nhwc; }

template <class O>
inline constexpr bool is_conv_option_v = false;
template <index_t H, index_t W>
inline constexpr bool is_conv_option_v<conv_stride_t<H, W>> = true;
template <index_t H, index_t W>
inline constexpr bool is_conv_option_v<conv_padding_t<H, W>> = true;
template <index_t H, index_t W>
inline constexpr bool is_conv_option_v<conv_dilation_t<H, W>> = true;
template <index_t H, index_t W>
inline constexpr bool is_conv_option_v<conv_output_padding_t<H, W>> = true;
template <index_t G>
inline constexpr bool is_conv_option_v<conv_groups_t<G>> = true;
template <>
inline constexpr bool is_conv_option_v<nchw_t> = true;
template <>
inline constexpr bool is_conv_option_v<nhwc_t> = true;

template <bool Transposed, class... O>
constexpr conv_geometry make_geometry() {
  conv_geometry g{};
  g.transposed = Transposed;
  (set_option(g, O{}), ...);
  return g;
}

template <conv_geometry G, class X, class Wt>
auto make_conv(X&& x, Wt&& w) {
  using NX = node_t<X>;
  using NW = node_t<Wt>;
  using Check = check_conv<typename NX::shape_type, typename NW::shape_type, G>;
  if constexpr (!Check::valid) return invalid_view{};
  else return conv2d_node<NX, NW, G>{{}, {as_node(std::forward<X>(x)), as_node(std::forward<Wt>(w))}};
}
} // namespace detail

template <class O>
concept conv_option = detail::is_conv_option_v<std::remove_cvref_t<O>>;

// y = conv2d(x, w, options...): cross-correlation as in PyTorch / TensorFlow.
template <expression X, expression Wt, conv_option... O>
auto conv2d(X&& x, Wt&& w, O...) {
  return detail::make_conv<detail::make_geometry<false, std::remove_cvref_t<O>...>()>(std::forward<X>(x), std::forward<Wt>(w));
}

// y = conv_transpose2d(x, w, options...): the adjoint of conv2d with the same options (PyTorch's
// ConvTranspose2d: output extent (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1).
template <expression X, expression Wt, conv_option... O>
auto conv_transpose2d(X&& x, Wt&& w, O...) {
  return detail::make_conv<detail::make_geometry<true, std::remove_cvref_t<O>...>()>(std::forward<X>(x), std::forward<Wt>(w));
}
} // namespace tenfold
