#pragma once
// 2-D convolution and transposed convolution as one node. The geometry (stride, padding, dilation,
// output padding, groups, layout) is a compile-time constant, so shapes are checked and the output
// shape is known from the types. Like matmul it holds its operands, and `at` computes one output element
// directly (the portable fallback and the device path); the CPU evaluator (cpu/conv.hpp) runs it on the
// GEMM with implicit im2col and fuses elementwise consumers into its store.
//
// Layouts (weights as the frameworks that use each layout store them):
//   nchw: x [N, C, H, W], conv weights [OC, C/groups, KH, KW] (PyTorch), transposed [C, OC/groups, KH, KW] (PyTorch)
//   nhwc: x [N, H, W, C], conv weights [KH, KW, C/groups, OC] (TensorFlow's HWIO), transposed [KH, KW, OC/groups, C]
//         (TensorFlow's conv2d_transpose filter)
#include "tenfold/core/expr.hpp"

namespace tenfold {

enum class conv_layout : int { nchw, nhwc };

// Compile-time convolution parameters (a structural type: it is a template argument of the node).
struct conv_geometry {
  index_t stride_h = 1, stride_w = 1;
  index_t pad_h = 0, pad_w = 0;
  index_t dil_h = 1, dil_w = 1;
  index_t out_pad_h = 0, out_pad_w = 0; // transposed only
  index_t groups = 1;
  conv_layout layout = conv_layout::nchw;
  bool transposed = false;
};

namespace detail {

// The input row (or column) read by output position o through kernel tap k along one axis, or -1
// where the tap reads padding. Convolution: i = o*s - p + k*d. Transposed convolution (the adjoint):
// input i feeds output o = i*s - p + k*d, so o reads i = (o + p - k*d) / s where that divides exactly.
TENFOLD_HD constexpr index_t conv_input_pos(index_t o, index_t k, index_t s, index_t p, index_t d, index_t extent, bool transposed) {
  if (!transposed) {
    const index_t i = o * s - p + k * d;
    return i >= 0 && i < extent ? i : -1;
  }
  const index_t t = o + p - k * d;
  if (s == 1) return t >= 0 && t < extent ? t : -1; // (no division: the adjoint of a stride-1 convolution)
  if (t < 0 || t % s != 0) return -1;
  const index_t i = t / s;
  return i < extent ? i : -1;
}

// Output extent along one axis (PyTorch's formulas).
constexpr index_t conv_out_extent(index_t in, index_t k, index_t s, index_t p, index_t d, index_t op, bool transposed) {
  if (!transposed) return (in + 2 * p - d * (k - 1) - 1) / s + 1;
  return (in - 1) * s - 2 * p + d * (k - 1) + op + 1;
}

// Extents of x and w named by role, whatever the layout.
template <class X, class Wt, conv_geometry G>
struct conv_extents {
  static constexpr bool nhwc = G.layout == conv_layout::nhwc;
  static constexpr bool ranks_ok = X::rank == 4 && Wt::rank == 4;
  static constexpr index_t xd(int i) { return ranks_ok ? X::dims[i] : 1; }
  static constexpr index_t wd(int i) { return ranks_ok ? Wt::dims[i] : 1; }
  static constexpr index_t N = xd(0), C = nhwc ? xd(3) : xd(1), H = nhwc ? xd(1) : xd(2), W = nhwc ? xd(2) : xd(3);
  static constexpr index_t KH = nhwc ? wd(0) : wd(2), KW = nhwc ? wd(1) : wd(3);
  // conv: [OC, Cg, .., ..] / [.., .., Cg, OC]; transposed: [C, OCg, .., ..] / [.., .., OCg, C]
  static constexpr index_t w_in = G.transposed ? (nhwc ? wd(3) : wd(0)) : (nhwc ? wd(2) : wd(1));
  static constexpr index_t w_out = G.transposed ? (nhwc ? wd(2) : wd(1)) : (nhwc ? wd(3) : wd(0));
  static constexpr index_t groups = G.groups > 0 ? G.groups : 1;
  static constexpr index_t Cg = C / groups;
  static constexpr index_t OC = G.transposed ? w_out * groups : w_out;
  static constexpr index_t OCg = OC / groups;
  static constexpr index_t OH = conv_out_extent(H, KH, G.stride_h, G.pad_h, G.dil_h, G.out_pad_h, G.transposed);
  static constexpr index_t OW = conv_out_extent(W, KW, G.stride_w, G.pad_w, G.dil_w, G.out_pad_w, G.transposed);
};

template <class X, class Wt, conv_geometry G>
struct check_conv {
  using E = conv_extents<X, Wt, G>;
  static constexpr bool ranks_ok = E::ranks_ok;
  static_assert(ranks_ok, "tenfold::conv2d: input and weights must have rank 4 (x [N, C, H, W] or [N, H, W, C]; see core/conv_node.hpp)");
  static constexpr bool params_ok = G.stride_h >= 1 && G.stride_w >= 1 && G.dil_h >= 1 && G.dil_w >= 1 && G.pad_h >= 0 &&
                                    G.pad_w >= 0 && G.groups >= 1 && G.out_pad_h >= 0 && G.out_pad_w >= 0;
  static_assert(params_ok, "tenfold::conv2d: stride, dilation and groups must be >= 1, padding and output_padding >= 0");
  static constexpr bool out_pad_ok = !params_ok || ((G.transposed || (G.out_pad_h == 0 && G.out_pad_w == 0)) &&
                                                    G.out_pad_h < (G.stride_h > G.dil_h ? G.stride_h : G.dil_h) &&
                                                    G.out_pad_w < (G.stride_w > G.dil_w ? G.stride_w : G.dil_w));
  static_assert(out_pad_ok, "tenfold::conv_transpose2d: output_padding must be smaller than the stride or the dilation "
                            "(and conv2d takes none)");
  static constexpr bool groups_ok = !ranks_ok || !params_ok || (E::C % G.groups == 0 && (G.transposed || E::w_out % G.groups == 0));
  static_assert(groups_ok, "tenfold::conv2d: the input channels and the output channels must be divisible by groups");
  static constexpr bool channels_ok = !ranks_ok || !params_ok || !groups_ok || (G.transposed ? E::w_in == E::C : E::w_in == E::Cg);
  static_assert(channels_ok, "tenfold::conv2d: the weights' input-channel extent does not match the input: it must be "
                             "C / groups (conv2d) or C (conv_transpose2d)");
  static constexpr bool kernel_ok = !ranks_ok || !params_ok ||
                                    (E::KH >= 1 && E::KW >= 1 &&
                                     (G.transposed || (E::H + 2 * G.pad_h >= G.dil_h * (E::KH - 1) + 1 &&
                                                       E::W + 2 * G.pad_w >= G.dil_w * (E::KW - 1) + 1)));
  static_assert(kernel_ok, "tenfold::conv2d: the (dilated) kernel is larger than the padded input");
  static constexpr bool output_ok = !ranks_ok || !params_ok || !kernel_ok || (E::OH >= 1 && E::OW >= 1);
  static_assert(output_ok, "tenfold::conv_transpose2d: the padding leaves an empty output");
  static constexpr bool valid = ranks_ok && params_ok && out_pad_ok && groups_ok && channels_ok && kernel_ok && output_ok;
};

template <class CX, class CW, conv_geometry G>
struct conv2d_node : node_tag {
  using x_type = CX;
  using w_type = CW;
  using extents = conv_extents<typename CX::shape_type, typename CW::shape_type, G>;
  static constexpr conv_geometry geometry = G;
  static constexpr bool nhwc = extents::nhwc;
  static constexpr index_t N = extents::N, C = extents::C, H = extents::H, W = extents::W, KH = extents::KH,
                           KW = extents::KW, OC = extents::OC, OH = extents::OH, OW = extents::OW, Cg = extents::Cg,
                           OCg = extents::OCg, groups = G.groups;
  using value_type = promote_t<typename CX::value_type, typename CW::value_type>;
  using shape_type = std::conditional_t<nhwc, shape<N, OH, OW, OC>, shape<N, OC, OH, OW>>;
  static constexpr int rank = 4;
  detail::tuple<CX, CW> args;
  // The same node over other operands (the walk prepares them into strided leaves).
  template <class... C>
  constexpr auto with_children(detail::tuple<C...>&& c) const {
    return conv2d_node<C..., G>{{}, std::move(c)};
  }

  // The sum's length: every (input channel of the group, tap) pair.
  static constexpr index_t K = Cg * KH * KW;

  TENFOLD_HD compute_t<value_type> at(const index_t* out) const { return partial_at(out, 0, 1); }
  // The terms k = first, first + step, ... of the output element's sum (a group of threads shares one
  // output this way on the GPU). k runs over (kh, kw, c) with the channel innermost for nhwc, so that
  // neighbouring k read neighbouring channels, and over (c, kh, kw) for nchw; taps over padding add 0.
  TENFOLD_HD compute_t<value_type> partial_at(const index_t* out, index_t first, index_t step) const {
    using A = compute_t<value_type>;
    const index_t n = out[0], oc = nhwc ? out[3] : out[1], oh = nhwc ? out[1] : out[2], ow = nhwc ? out[2] : out[3];
    const index_t g = oc / OCg, m = oc % OCg;
    A acc{};
    for (index_t k = first; k < K; k += step) {
      index_t c, kh, kw;
      if constexpr (nhwc) {
        c = k % Cg;
        kw = (k / Cg) % KW;
        kh = k / (Cg * KW);
      } else {
        kw = k % KW;
        kh = (k / KW) % KH;
        c = k / (KW * KH);
      }
      const index_t ih = conv_input_pos(oh, kh, G.stride_h, G.pad_h, G.dil_h, H, G.transposed);
      const index_t iw = conv_input_pos(ow, kw, G.stride_w, G.pad_w, G.dil_w, W, G.transposed);
      if (ih < 0 || iw < 0) continue;
      const index_t ci = g * Cg + c;
      const index_t xi[4] = {n, nhwc ? ih : ci, nhwc ? iw : ih, nhwc ? ci : iw};
      index_t wi[4];
      if (!G.transposed) {
        if (nhwc) wi[0] = kh, wi[1] = kw, wi[2] = c, wi[3] = oc;
        else wi[0] = oc, wi[1] = c, wi[2] = kh, wi[3] = kw;
      } else {
        if (nhwc) wi[0] = kh, wi[1] = kw, wi[2] = m, wi[3] = ci;
        else wi[0] = ci, wi[1] = m, wi[2] = kh, wi[3] = kw;
      }
      acc += static_cast<A>(detail::get<0>(args).at(xi)) * static_cast<A>(detail::get<1>(args).at(wi));
    }
    return acc;
  }
  static std::string str() { return std::string(G.transposed ? "conv_transpose2d(" : "conv2d(") + CX::str() + ", " + CW::str() + ")"; }
};

template <class E>
inline constexpr bool is_conv_node_v = false;
template <class X, class Wt, conv_geometry G>
inline constexpr bool is_conv_node_v<conv2d_node<X, Wt, G>> = true;
} // namespace detail
} // namespace tenfold
