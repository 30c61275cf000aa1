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

// The weights' gradient: for every tap, the input windows against g summed over the batch and the
// output positions, as one GEMM: [OC, N*OH*OW] x [N*OH*OW, C*KH*KW] (NCHW; NHWC transposes it). The
// windows matrix is im2col of the (padded) input: a view the walk materialises as the GEMM's operand.
template <class N, class Xn, class G>
auto conv_weight_adjoint(const Xn& x, const G& g) {
  constexpr conv_geometry f = N::geometry;
  static_assert(!f.transposed, "tenfold::value_and_grad: conv_transpose2d's weight gradient is not built yet");
  static_assert(f.groups == 1, "tenfold::value_and_grad: the weight gradient of a grouped convolution is not built yet");
  constexpr index_t B = N::N, C = N::C, OC = N::OC, OH = N::OH, OW = N::OW, KH = N::KH, KW = N::KW;
  using L = std::conditional_t<N::nhwc, nhwc_t, nchw_t>;
  // The windows are gathered into a buffer in the GEMM's order (a let: the permutation folds into the
  // reads), so that the matrix is a reshape of memory rather than an index map evaluated per element;
  // a padded input is padded into a buffer first, so that its windows are strides too.
  auto product = [g](const auto& xp) {
    constexpr conv_geometry geo = N::geometry;
    auto win = detail::windows_of<L, OH, OW, hw{KH, KW}, hw{geo.stride_h, geo.stride_w}, hw{geo.dil_h, geo.dil_w}>(xp);
    if constexpr (!N::nhwc) { // win [B, C, OH, OW, KH, KW]
      return let(permute<0, 2, 3, 1, 4, 5>(std::move(win)), [g](const auto& w) {
        auto cols = reshape<B * OH * OW, C * KH * KW>(w);
        auto rows = reshape<OC, B * OH * OW>(permute<1, 0, 2, 3>(g));
        return reshape<OC, C, KH, KW>(matmul(std::move(rows), std::move(cols)));
      });
    } else { // win [B, OH, OW, C, KH, KW]
      return let(permute<0, 1, 2, 4, 5, 3>(std::move(win)), [g](const auto& w) {
        auto cols = reshape<B * OH * OW, KH * KW * C>(w);
        return reshape<KH, KW, C, OC>(matmul(transpose(std::move(cols)), reshape<B * OH * OW, OC>(g)));
      });
    }
  };
  if constexpr (f.pad_h == 0 && f.pad_w == 0 && detail::is_leaf_v<Xn>) return product(x);
  else if constexpr (f.pad_h == 0 && f.pad_w == 0) return let(x, product);
  else if constexpr (N::nhwc) return let(pad<0, 0, f.pad_h, f.pad_h, f.pad_w, f.pad_w, 0, 0>(x, 0), product);
  else return let(pad<0, 0, 0, 0, f.pad_h, f.pad_h, f.pad_w, f.pad_w>(x, 0), product);
}

} // namespace tenfold::autodiff
