#pragma once
// The adjoints of conv2d and conv_transpose2d (part of reverse mode, autodiff/backward.hpp).
#include "tenfold/core/let.hpp"
#include "tenfold/core/windows.hpp"
#include "tenfold/ops/conv.hpp"
#include "tenfold/ops/linear.hpp"

namespace tenfold::autodiff {


// ---- convolution ---------------------------------------------------------------------------------------
// The input's gradient is the transposed convolution of g with the same weights and geometry (and
// conversely): the same implicit-im2col GEMM. output_padding restores the rows the forward stride
// dropped.
template <class N>
constexpr conv_geometry adjoint_geometry() {
  constexpr conv_geometry f = N::geometry;
  conv_geometry r = f;
  r.transposed = !f.transposed;
  r.out_pad_h = r.out_pad_w = 0;
  if (!f.transposed) {
    r.out_pad_h = N::H - detail::conv_out_extent(N::OH, N::KH, f.stride_h, f.pad_h, f.dil_h, 0, true);
    r.out_pad_w = N::W - detail::conv_out_extent(N::OW, N::KW, f.stride_w, f.pad_w, f.dil_w, 0, true);
  }
  return r;
}
template <class N, class Wn, class G>
auto conv_input_adjoint(const Wn& w, const G& g) {
  constexpr conv_geometry f = N::geometry, a = adjoint_geometry<N>();
  static_assert(f.transposed || (a.out_pad_h < f.stride_h && a.out_pad_w < f.stride_w) || (f.stride_h == 1 && f.stride_w == 1),
                "tenfold::value_and_grad: conv2d's input gradient needs output padding below the stride");
  static_assert(!f.transposed || (f.out_pad_h < f.stride_h && f.out_pad_w < f.stride_w),
                "tenfold::value_and_grad: conv_transpose2d's input gradient needs output padding below the stride");
  return detail::make_conv<a>(detail::as_node(g), w);
}

// The weights' gradient pairs every tap with an image `r` at P x Q positions and the KH x KW windows of
// another image `v` at those positions, summed over the batch and the positions: per group one GEMM,
// rows [G, RC/G, B*P*Q] x windows [G, B*P*Q, VC/G*KH*KW] (NCHW; NHWC transposes it). The weights of
// either direction are then [RC, VC/G, KH, KW] (NHWC: [KH, KW, VC/G, RC]), c and oc in one group:
//   conv2d:           dW[oc, c, k] = sum g[oc, o] * x[c, o*s - p + k*d]    r = g, v = x, P x Q = OH x OW
//   conv_transpose2d: dW[c, oc, k] = sum x[c, i] * g[oc, i*s - p + k*d]    r = x, v = g, P x Q = H x W
// (input i feeds output o = i*s - p + k*d: conv_node's conv_input_pos.) The windows matrix is im2col of
// v, padded by p in front and behind by what its last window still needs (at most p; for
// conv_transpose2d p - output_padding, or none).
template <class N, index_t P, index_t Q, class R, class V>
auto conv_weight_gemm(const R& r, const V& v) {
  constexpr conv_geometry f = N::geometry;
  constexpr bool nhwc = N::nhwc;
  using L = std::conditional_t<nhwc, nhwc_t, nchw_t>;
  constexpr index_t B = N::N, G = N::groups, KH = N::KH, KW = N::KW, M = B * P * Q;
  constexpr index_t RC = f.transposed ? N::C : N::OC, VC = f.transposed ? N::OC : N::C, RCg = RC / G, VCg = VC / G;
  using VS = typename V::shape_type;
  constexpr int h = detail::spatial_axis<VS, L>;
  constexpr auto behind = [](index_t n, index_t k, index_t s, index_t p, index_t d, index_t extent) {
    const index_t need = (n - 1) * s + d * (k - 1) + 1 - p - extent;
    return need > 0 ? need : 0;
  };
  constexpr index_t bh = behind(P, KH, f.stride_h, f.pad_h, f.dil_h, VS::dims[h]);
  constexpr index_t bw = behind(Q, KW, f.stride_w, f.pad_w, f.dil_w, VS::dims[h + 1]);
  // The windows are gathered into a buffer in the GEMM's order (a let: the permutation folds into the
  // reads), so that the matrix is a reshape of memory rather than an index map evaluated per element;
  // a padded v is padded into a buffer first, so that its windows are strides too.
  auto product = [r](const auto& vp) {
    constexpr conv_geometry geo = N::geometry;
    auto win = detail::windows_of<L, P, Q, hw{KH, KW}, hw{geo.stride_h, geo.stride_w}, hw{geo.dil_h, geo.dil_w}>(vp);
    if constexpr (!nhwc) { // win [B, VC, P, Q, KH, KW] -> [G, B, P, Q, VCg, KH, KW]
      return let(permute<1, 0, 3, 4, 2, 5, 6>(reshape<B, G, VCg, P, Q, KH, KW>(std::move(win))), [r](const auto& w) {
        auto cols = reshape<G, M, VCg * KH * KW>(w);
        auto rows = reshape<G, RCg, M>(permute<1, 2, 0, 3, 4>(reshape<B, G, RCg, P, Q>(r)));
        return reshape<RC, VCg, KH, KW>(matmul(std::move(rows), std::move(cols)));
      });
    } else if constexpr (VCg * KW < 16) {
      // Few channels (a first layer on 1 or 3): a window row is a few values, so the windows are laid
      // out k-major, [G, KH, KW, VCg, B, P, Q], gathered in runs along Q, and read as a row-major
      // [K, M] operand (the same sums in the same order as the layout below).
      return let(permute<3, 5, 6, 4, 0, 1, 2>(reshape<B, P, Q, G, VCg, KH, KW>(std::move(win))), [r](const auto& w) {
        auto cols_t = reshape<G, KH * KW * VCg, M>(w);
        auto rows = permute<1, 0, 2>(reshape<M, G, RCg>(r));
        auto dw = reshape<G, KH, KW, VCg, RCg>(matmul(std::move(cols_t), std::move(rows)));
        return reshape<KH, KW, VCg, RC>(permute<1, 2, 3, 0, 4>(std::move(dw)));
      });
    } else { // win [B, P, Q, VC, KH, KW] -> [G, B, P, Q, KH, KW, VCg]
      return let(permute<3, 0, 1, 2, 5, 6, 4>(reshape<B, P, Q, G, VCg, KH, KW>(std::move(win))), [r](const auto& w) {
        auto cols = reshape<G, M, KH * KW * VCg>(w);
        auto rows = permute<1, 0, 2>(reshape<M, G, RCg>(r));
        auto dw = reshape<G, KH, KW, VCg, RCg>(matmul(swapaxes<1, 2>(std::move(cols)), std::move(rows)));
        return reshape<KH, KW, VCg, RC>(permute<1, 2, 3, 0, 4>(std::move(dw)));
      });
    }
  };
  constexpr index_t ph = f.pad_h, pw = f.pad_w;
  if constexpr (ph + bh + pw + bw == 0 && detail::is_leaf_v<V>) return product(v);
  else if constexpr (ph + bh + pw + bw == 0) return let(v, product);
  else if constexpr (nhwc) return let(pad<0, 0, ph, bh, pw, bw, 0, 0>(v, 0), product);
  else return let(pad<0, 0, 0, 0, ph, bh, pw, bw>(v, 0), product);
}
// NHWC conv2d with one group: the weights' gradient is itself a convolution, of x with the batch axis
// as its channels and g as its kernel,
//   dW[kh, kw, c, oc] = sum over n, oh, ow of x[n, oh*s - p + kh*d, ow*s - p + kw*d, c] g[n, oh, ow, oc]
//                     = conv2d(x' [C, H, W, N], g' [OH, OW, N, OC], stride d, dilation s, padding p)[c, kh, kw, oc]
// so the implicit-im2col GEMM reads x' (x transposed into a buffer: the input's size, where the windows
// above are KH x KW times the output's) in whole vectors of the batch. Where the stride leaves input
// rows unread, that convolution's output would be larger than the kernel: the windows below then.
template <class N>
constexpr bool weight_gradient_as_conv() {
  constexpr conv_geometry f = N::geometry;
  return N::nhwc && !f.transposed && N::groups == 1 &&
         detail::conv_out_extent(N::H, N::OH, f.dil_h, f.pad_h, f.stride_h, 0, false) == N::KH &&
         detail::conv_out_extent(N::W, N::OW, f.dil_w, f.pad_w, f.stride_w, 0, false) == N::KW;
}
template <class N, class Xn, class G>
auto conv_weight_adjoint(const Xn& x, const G& g) {
  constexpr conv_geometry f = N::geometry;
  if constexpr (weight_gradient_as_conv<N>()) {
    auto gk = permute<1, 2, 0, 3>(detail::as_node(g)); // [OH, OW, N, OC]
    return let(permute<3, 1, 2, 0>(x), [gk](const auto& xt) {
      constexpr conv_geometry a = N::geometry;
      return permute<1, 2, 0, 3>(conv2d(xt, gk, stride<a.dil_h, a.dil_w>, dilation<a.stride_h, a.stride_w>,
                                        padding<a.pad_h, a.pad_w>, nhwc));
    });
  } else if constexpr (!f.transposed) {
    return conv_weight_gemm<N, N::OH, N::OW>(detail::as_node(g), x);
  } else {
    return conv_weight_gemm<N, N::H, N::W>(x, detail::as_node(g));
  }
}

} // namespace tenfold::autodiff
