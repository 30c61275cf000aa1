#pragma once
// Implicit im2col: the GEMM operands of a convolution that are never built in memory. The packing
// routines read the input through the window geometry (zero where a tap falls in the padding) straight
// into the micro-kernel's panels, so no im2col matrix (KH*KW times the input) is materialised; only the
// KC x NC / MC x KC blocks the GEMM packs anyway exist at any time. gemm_range finds these pack_a /
// pack_b overloads by argument-dependent lookup.
//
// The reduction index k runs over (c, kh, kw) for NCHW and (kh, kw, c) for NHWC: in NHWC a k-slice of
// an im2col row is a few contiguous runs of channels; in NCHW a k-row of im2col is a strided (stride 1:
// contiguous) run along an input row.
//
// Transposed convolution uses the same packing with the transposed geometry (conv_input_pos: output o
// reads input (o + p - k*d) / s where that divides). With stride s, 1 - 1/s^2 of the packed values are
// zeros, and the kernels multiply them: that costs s^2 the FLOPs of the useful work, but materialises
// nothing, keeps one code path and keeps the sums in a fixed order (deterministic over threads). The
// alternatives: scatter-add of a GEMM result (col2im: a buffer of im2col's size and a second pass), or a
// split into s^2 sub-pixel convolutions (no waste, s^2 smaller GEMMs with ragged kernels); the latter is
// the one to take if transposed convolutions with stride > 1 become a hot path.
#include <algorithm>

#include "tenfold/core/conv_node.hpp"
#include "tenfold/cpu/gemm_pack.hpp"

namespace tenfold::cpu {

// Strides of a prepared conv node's operands by role. Weights are indexed by (m, c, kh, kw): m the
// output channel and c the input channel, both within the group.
template <class Cv>
struct conv_strides {
  using XL = typename Cv::x_type;
  using WL = typename Cv::w_type;
  static constexpr bool nhwc = Cv::nhwc, tr = Cv::geometry.transposed;
  static constexpr index_t xn = XL::strides[0], xc = XL::strides[nhwc ? 3 : 1], xh = XL::strides[nhwc ? 1 : 2],
                           xw = XL::strides[nhwc ? 2 : 3];
  // conv nchw [OC, Cg, KH, KW], conv nhwc [KH, KW, Cg, OC], transposed nchw [C, OCg, KH, KW], nhwc [KH, KW, OCg, C]
  static constexpr int m_axis = tr ? (nhwc ? 2 : 1) : (nhwc ? 3 : 0), c_axis = tr ? (nhwc ? 3 : 0) : (nhwc ? 2 : 1);
  static constexpr index_t wm = WL::strides[m_axis], wc = WL::strides[c_axis], wh = WL::strides[nhwc ? 0 : 2],
                           wkw = WL::strides[nhwc ? 1 : 3];
  // Offsets of group g's first input channel in x and first element in w.
  static constexpr index_t x_group(index_t g) { return g * Cv::Cg * xc; }
  static constexpr index_t w_group(index_t g) { return tr ? g * Cv::Cg * wc : g * Cv::OCg * wm; }
  // k -> (c, kh, kw) in the layout's order.
  static constexpr index_t KHW = Cv::KH * Cv::KW;
  TENFOLD_INLINE static void split_k(index_t k, index_t& c, index_t& kh, index_t& kw) {
    if constexpr (nhwc) c = k % Cv::Cg, kw = k / Cv::Cg % Cv::KW, kh = k / (Cv::Cg * Cv::KW);
    else c = k / KHW, kh = k / Cv::KW % Cv::KH, kw = k % Cv::KW;
  }
  TENFOLD_INLINE static index_t w_offset(index_t k) {
    index_t c, kh, kw;
    split_k(k, c, kh, kw);
    return c * wc + kh * wh + kw * wkw;
  }
  TENFOLD_INLINE static index_t ih(index_t oh, index_t kh) {
    constexpr conv_geometry G = Cv::geometry;
    return detail::conv_input_pos(oh, kh, G.stride_h, G.pad_h, G.dil_h, Cv::H, G.transposed);
  }
  TENFOLD_INLINE static index_t iw(index_t ow, index_t kw) {
    constexpr conv_geometry G = Cv::geometry;
    return detail::conv_input_pos(ow, kw, G.stride_w, G.pad_w, G.dil_w, Cv::W, G.transposed);
  }
};

// The weights of one group: (m, k) as the A operand (NCHW), (k, m) as the B operand (NHWC).
// p: the group's first element.
template <class Cv, class E>
struct conv_weight_ref {
  const E* p;
};
// im2col as the A operand (NHWC): row r = (n, oh, ow) over the whole batch, column k = (kh, kw, c).
// p: the group's first channel of x.
template <class Cv, class E>
struct im2col_rows_ref {
  const E* p;
};
// im2col as the B operand (NCHW): row k = (c, kh, kw), column j = (oh, ow) of one image.
// p: image n, the group's first channel.
template <class Cv, class E>
struct im2col_cols_ref {
  const E* p;
};

template <class T, class Cv, class E>
void pack_a(const conv_weight_ref<Cv, E>& a, index_t i0, index_t mc, index_t k0, index_t kc, T* out) {
  using X = conv_strides<Cv>;
  constexpr index_t MR = gemm_tile<T>::MR;
  for (index_t p = 0; p < mc; p += MR) {
    const index_t rows = std::min(MR, mc - p);
    const E* src = a.p + (i0 + p) * X::wm;
    for (index_t k = 0; k < kc; ++k, out += rows) {
      const index_t off = X::w_offset(k0 + k);
      for (index_t r = 0; r < rows; ++r) out[r] = static_cast<T>(src[r * X::wm + off]);
    }
  }
}

template <class T, class Cv, class E>
void pack_b(const conv_weight_ref<Cv, E>& b, index_t k0, index_t kc, index_t j0, index_t nc, T* out) {
  using X = conv_strides<Cv>;
  constexpr index_t NR = gemm_tile<T>::NR;
  for (index_t q = 0; q < nc; q += NR, out += kc * NR) {
    const index_t cols = std::min(NR, nc - q);
    const E* src = b.p + (j0 + q) * X::wm;
    for (index_t k = 0; k < kc; ++k) {
      const index_t off = X::w_offset(k0 + k);
      for (index_t c = 0; c < NR; ++c) out[k * NR + c] = c < cols ? static_cast<T>(src[c * X::wm + off]) : T(0);
    }
  }
}

template <class T, class Cv, class E>
void pack_a(const im2col_rows_ref<Cv, E>& a, index_t i0, index_t mc, index_t k0, index_t kc, T* out) {
  using X = conv_strides<Cv>;
  constexpr index_t MR = gemm_tile<T>::MR, Cg = Cv::Cg, OHW = Cv::OH * Cv::OW;
  for (index_t p = 0; p < mc; p += MR) {
    const index_t rows = std::min(MR, mc - p);
    index_t img[MR], oh[MR], ow[MR];
    for (index_t r = 0; r < rows; ++r) {
      const index_t row = i0 + p + r;
      img[r] = row / OHW * X::xn, oh[r] = row % OHW / Cv::OW, ow[r] = row % Cv::OW;
    }
    index_t c, kh, kw;
    X::split_k(k0, c, kh, kw);
    // Runs of channels at one kernel tap: contiguous in x (NHWC), written k-major into the panel.
    for (index_t kk = 0; kk < kc;) {
      const index_t run = std::min(Cg - c, kc - kk);
      for (index_t r = 0; r < rows; ++r) {
        T* o = out + kk * rows + r;
        const index_t ih = X::ih(oh[r], kh), iw = X::iw(ow[r], kw);
        if (ih >= 0 && iw >= 0) {
          const E* src = a.p + img[r] + ih * X::xh + iw * X::xw + c * X::xc;
          for (index_t q = 0; q < run; ++q) o[q * rows] = static_cast<T>(src[q * X::xc]);
        } else {
          for (index_t q = 0; q < run; ++q) o[q * rows] = T(0);
        }
      }
      kk += run;
      c = 0;
      if (++kw == Cv::KW) kw = 0, ++kh;
    }
    out += rows * kc;
  }
}

template <class T, class Cv, class E>
void pack_b(const im2col_cols_ref<Cv, E>& b, index_t k0, index_t kc, index_t j0, index_t nc, T* out) {
  using X = conv_strides<Cv>;
  constexpr index_t NR = gemm_tile<T>::NR, OW = Cv::OW;
  constexpr conv_geometry G = Cv::geometry;
  constexpr index_t s = G.stride_w;
  const index_t padded = (nc + NR - 1) / NR * NR;
  for (index_t kk = 0; kk < kc; ++kk) {
    index_t c, kh, kw;
    X::split_k(k0 + kk, c, kh, kw);
    const E* plane = b.p + c * X::xc;
    index_t oh = j0 / OW, ow = j0 % OW;
    // Segments of columns within one output row and one panel: one input row, read with the stride.
    for (index_t jj = 0; jj < nc;) {
      const index_t seg = std::min({OW - ow, nc - jj, NR - jj % NR});
      T* dst = out + jj / NR * kc * NR + kk * NR + jj % NR;
      const index_t ih = X::ih(oh, kh);
      if (ih < 0) {
        for (index_t t = 0; t < seg; ++t) dst[t] = T(0);
      } else if constexpr (!G.transposed) {
        const E* row = plane + ih * X::xh;
        // iw = iw0 + t*s is inside [0, W) for t in [lo, hi).
        const index_t iw0 = ow * s - G.pad_w + kw * G.dil_w;
        const index_t lo = std::min(seg, iw0 >= 0 ? index_t(0) : (-iw0 + s - 1) / s);
        const index_t hi = std::max(lo, std::min(seg, iw0 < Cv::W ? (Cv::W - iw0 + s - 1) / s : index_t(0)));
        index_t t = 0;
        for (; t < lo; ++t) dst[t] = T(0);
        for (; t < hi; ++t) dst[t] = static_cast<T>(row[(iw0 + t * s) * X::xw]);
        for (; t < seg; ++t) dst[t] = T(0);
      } else {
        const E* row = plane + ih * X::xh;
        for (index_t t = 0; t < seg; ++t) {
          const index_t iw = X::iw(ow + t, kw);
          dst[t] = iw >= 0 ? static_cast<T>(row[iw * X::xw]) : T(0);
        }
      }
      jj += seg;
      ow += seg;
      if (ow == OW) ow = 0, ++oh;
    }
    for (index_t jj = nc; jj < padded; ++jj) out[jj / NR * kc * NR + kk * NR + jj % NR] = T(0);
  }
}
} // namespace tenfold::cpu
