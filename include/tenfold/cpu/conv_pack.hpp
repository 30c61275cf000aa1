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
#include <cstring>

#include "tenfold/core/conv_node.hpp"
#include "tenfold/cpu/gemm.hpp"

namespace tenfold::cpu {

// The geometry the packing needs, as run-time values: the packing routines (and gemm_range over them)
// are then instantiated once per element type, not once per convolution shape, which keeps compile
// times flat; they divide only once per panel row or k row, never per element.
struct conv_dims {
  index_t H, W, OH, OW, KH, KW, Cg;
  index_t sh, sw, ph, pw, dh, dw;
  bool transposed, nhwc;
  index_t xn, xc, xh, xw;  // x's strides by role
  index_t wm, wc, wh, wkw; // w's strides by role: m the output channel, c the input channel (within the group)

  TENFOLD_INLINE index_t ih(index_t oh, index_t kh) const { return detail::conv_input_pos(oh, kh, sh, ph, dh, H, transposed); }
  TENFOLD_INLINE index_t iw(index_t ow, index_t kw) const { return detail::conv_input_pos(ow, kw, sw, pw, dw, W, transposed); }
};

// Walks the reduction index k over (c, kh, kw) (NCHW) or (kh, kw, c) (NHWC), incrementally.
struct conv_k_walk {
  const conv_dims& d;
  index_t c, kh, kw;
  conv_k_walk(const conv_dims& dims, index_t k) : d(dims) {
    if (d.nhwc) c = k % d.Cg, kw = k / d.Cg % d.KW, kh = k / (d.Cg * d.KW);
    else c = k / (d.KH * d.KW), kh = k / d.KW % d.KH, kw = k % d.KW;
  }
  TENFOLD_INLINE index_t w_offset() const { return c * d.wc + kh * d.wh + kw * d.wkw; }
  TENFOLD_INLINE void next() {
    if (d.nhwc) {
      if (++c < d.Cg) return;
      c = 0;
      if (++kw == d.KW) kw = 0, ++kh;
    } else if (++kw == d.KW) {
      kw = 0;
      if (++kh == d.KH) kh = 0, ++c;
    }
  }
};

// conv_dims of a prepared conv node (its operands are strided leaves).
template <class Cv>
constexpr conv_dims conv_dims_of() {
  constexpr conv_geometry G = Cv::geometry;
  constexpr bool nhwc = Cv::nhwc, tr = G.transposed;
  constexpr auto xs = Cv::x_type::strides;
  constexpr auto ws = Cv::w_type::strides;
  // conv nchw [OC, Cg, KH, KW], conv nhwc [KH, KW, Cg, OC], transposed nchw [C, OCg, KH, KW], nhwc [KH, KW, OCg, C]
  constexpr int m_axis = tr ? (nhwc ? 2 : 1) : (nhwc ? 3 : 0), c_axis = tr ? (nhwc ? 3 : 0) : (nhwc ? 2 : 1);
  return {Cv::H, Cv::W, Cv::OH, Cv::OW, Cv::KH, Cv::KW, Cv::Cg, G.stride_h, G.stride_w, G.pad_h, G.pad_w, G.dil_h, G.dil_w, tr, nhwc,
          xs[0], xs[nhwc ? 3 : 1], xs[nhwc ? 1 : 2], xs[nhwc ? 2 : 3], ws[m_axis], ws[c_axis], ws[nhwc ? 0 : 2], ws[nhwc ? 1 : 3]};
}

// The weights of one group: (m, k) as the A operand (NCHW), (k, m) as the B operand (NHWC).
// p: the group's first element.
template <class E>
struct conv_weight_ref {
  const E* p;
  const conv_dims* d;
};
// im2col as the A operand (NHWC): row r = (n, oh, ow) over the whole batch, column k = (kh, kw, c).
// p: the group's first channel of x.
template <class E>
struct im2col_rows_ref {
  const E* p;
  const conv_dims* d;
};
// im2col as the B operand (NCHW): row k = (c, kh, kw), column j = (oh, ow) of one image.
// p: image n, the group's first channel.
template <class E>
struct im2col_cols_ref {
  const E* p;
  const conv_dims* d;
};

template <class T, class E>
index_t pack_a(const conv_weight_ref<E>& a, index_t i0, index_t mc, index_t k0, index_t kc, T* out) {
  constexpr index_t MR = gemm_tile<T>::MR;
  const conv_dims& d = *a.d;
  for (index_t p = 0; p < mc; p += MR) {
    const index_t rows = std::min(MR, mc - p);
    const E* src = a.p + (i0 + p) * d.wm;
    conv_k_walk k(d, k0);
    for (index_t kk = 0; kk < kc; ++kk, out += rows, k.next()) {
      const E* s = src + k.w_offset();
      for (index_t r = 0; r < rows; ++r) out[r] = static_cast<T>(s[r * d.wm]);
    }
  }
  return 1; // k-major panels
}

template <class T, class E>
void pack_b(const conv_weight_ref<E>& b, index_t k0, index_t kc, index_t j0, index_t nc, T* out) {
  constexpr index_t NR = gemm_tile<T>::NR, W = gemm_tile<T>::W;
  const conv_dims& d = *b.d;
  if (d.wm == 1) { // output channels adjacent: each k's row read once, left to right, and dealt out to the panels
    auto put = [&](index_t kk, const E* s) {
      T* o = out + kk * NR;
      for (index_t q = 0; q < nc; q += NR, o += kc * NR) {
        const index_t cols = std::min(NR, nc - q);
        if (cols == NR) {
#pragma GCC unroll 4
          for (index_t c = 0; c < NR; ++c) o[c] = static_cast<T>(s[q + c]);
        } else if (std::is_same_v<T, E> && cols == W) { // one vector of channels (16 on AVX-512)
          batch<T>::load_unaligned(reinterpret_cast<const T*>(s) + q).store_unaligned(o);
          for (index_t c = W; c < NR; c += W) batch<T>(T(0)).store_unaligned(o + c);
        } else {
          for (index_t c = 0; c < cols; ++c) o[c] = static_cast<T>(s[q + c]);
          for (index_t c = cols; c < NR; ++c) o[c] = T(0);
        }
      }
    };
    if (d.nhwc && d.wc >= d.KW * d.wkw && d.wc >= d.KH * d.wh) {
      // The input channel, k's innermost axis, is the outermost in memory (a weight gradient's g viewed
      // as a kernel [OH, OW, N, OC], whose channels are the batch): k order would read one row per
      // channel, each in another page. Read channel by channel instead, along the taps (kh, kw), which
      // are adjacent rows; each lands in its k slot all the same (the panels are the same).
      const index_t p0 = k0 / d.Cg, p1 = (k0 + kc - 1) / d.Cg + 1; // the taps of the block
      for (index_t c = 0; c < d.Cg; ++c)
        for (index_t p = p0, kh = p0 / d.KW, kw = p0 % d.KW; p < p1; ++p) {
          const index_t kk = p * d.Cg + c - k0;
          if (kk >= 0 && kk < kc) put(kk, b.p + j0 * d.wm + c * d.wc + kh * d.wh + kw * d.wkw);
          if (++kw == d.KW) kw = 0, ++kh;
        }
    } else {
      conv_k_walk k(d, k0);
      for (index_t kk = 0; kk < kc; ++kk, k.next()) put(kk, b.p + j0 * d.wm + k.w_offset());
    }
    return;
  }
  for (index_t q = 0; q < nc; q += NR, out += kc * NR) {
    const index_t cols = std::min(NR, nc - q);
    const E* src = b.p + (j0 + q) * d.wm;
    conv_k_walk k(d, k0);
    for (index_t kk = 0; kk < kc; ++kk, k.next()) {
      const E* s = src + k.w_offset();
      T* o = out + kk * NR;
      if (d.wm == 1)
        for (index_t c = 0; c < cols; ++c) o[c] = static_cast<T>(s[c]);
      else
        for (index_t c = 0; c < cols; ++c) o[c] = static_cast<T>(s[c * d.wm]);
      for (index_t c = cols; c < NR; ++c) o[c] = T(0);
    }
  }
}

// Few channels per group (a first layer on 1 or 3 channels, depthwise): k outermost, and a panel's rows
// taken in runs that share an image and an output row, so that a tap reads one strided run of x per run
// of rows (the channel-run order below would handle one value per row and tap). The rows are walked
// from the block's first without dividing, and the taps of the k slice are laid out once per block, in
// chunks: per panel and tap then only a bounds test and a copy, and a panel whose every tap lies inside
// the image (most of them) skips even the test. (Dividing per panel and sizing each run's bounds per tap
// was two thirds of a 1 -> 32 channel 28 x 28 layer's time.)
template <class T, class E>
void pack_a_few_channels(const im2col_rows_ref<E>& a, index_t i0, index_t mc, index_t k0, index_t kc, T* out) {
  constexpr index_t MR = gemm_tile<T>::MR, chunk = 64;
  const conv_dims& d = *a.d;
  const index_t step = d.sw * d.xw;
  struct tap_at {
    index_t dh, dw, off; // input position from the window's corner, and x's offset from that corner
  } taps[chunk];
  struct run_of_rows {
    index_t r0, n, ih, iw, base; // rows [r0, r0 + n) of a panel: the window corner of row r0 and its offset in x
  };
  for (index_t c0 = 0; c0 < kc; c0 += chunk) {
    const index_t cn = std::min(chunk, kc - c0);
    index_t span_h = 0, span_w = 0; // the window's extent: a run inside [0, H - span_h] x [0, W - span_w] needs no test
    conv_k_walk k(d, k0 + c0);
    for (index_t kk = 0; kk < cn; ++kk, k.next()) {
      taps[kk] = {k.kh * d.dh, k.kw * d.dw, k.kh * d.dh * d.xh + k.kw * d.dw * d.xw + k.c * d.xc};
      span_h = std::max(span_h, taps[kk].dh), span_w = std::max(span_w, taps[kk].dw);
    }
    const index_t OHW = d.OH * d.OW;
    index_t n = i0 / OHW, oh = i0 % OHW / d.OW, ow = i0 % d.OW; // the panel's first row, stepped to
    for (index_t p = 0; p < mc; p += MR) {
      const index_t rows = std::min(MR, mc - p);
      T* panel = out + p * kc; // k-major: rows values per k
      run_of_rows runs[MR];
      index_t nruns = 0;
      for (index_t r = 0; r < rows;) {
        const index_t len = std::min(rows - r, d.OW - ow), ih = oh * d.sh - d.ph, iw = ow * d.sw - d.pw;
        runs[nruns++] = {r, len, ih, iw, n * d.xn + ih * d.xh + iw * d.xw};
        r += len, ow += len;
        if (ow == d.OW) {
          ow = 0;
          if (++oh == d.OH) oh = 0, ++n;
        }
      }
      for (index_t u = 0; u < nruns; ++u) {
        const run_of_rows& g = runs[u];
        T* o0 = panel + c0 * rows + g.r0;
        const index_t last = (g.n - 1) * d.sw; // the run's last row reads iw + last
        if (g.ih >= 0 && g.ih + span_h < d.H && g.iw >= 0 && g.iw + last + span_w < d.W) { // every tap inside
          const E* src = a.p + g.base;
          for (index_t kk = 0; kk < cn; ++kk) {
            const E* q = src + taps[kk].off;
            T* o = o0 + kk * rows;
            if (step == 1 && g.n == MR) {
              if constexpr (std::is_same_v<T, E>) std::memcpy(o, q, sizeof(T) * MR); // (a few vector moves)
              else
                for (index_t t = 0; t < MR; ++t) o[t] = static_cast<T>(q[t]);
            } else {
              for (index_t t = 0; t < g.n; ++t) o[t] = static_cast<T>(q[t * step]);
            }
          }
          continue;
        }
        for (index_t kk = 0; kk < cn; ++kk) {
          T* o = o0 + kk * rows;
          const index_t ih = g.ih + taps[kk].dh, iw = g.iw + taps[kk].dw;
          if (ih < 0 || ih >= d.H) {
            for (index_t t = 0; t < g.n; ++t) o[t] = T(0);
            continue;
          }
          // row r0 + t reads iw + t*sw: inside [0, W) for t in [lo, hi)
          const auto up = [s = d.sw](index_t v) { return s == 1 ? v : (v + s - 1) / s; };
          const index_t lo = std::min(g.n, iw >= 0 ? index_t(0) : up(-iw));
          const index_t hi = std::max(lo, std::min(g.n, iw >= d.W ? index_t(0) : up(d.W - iw)));
          index_t t = 0;
          for (; t < lo; ++t) o[t] = T(0);
          if (t < hi) // (the pointer is formed only where it points into x)
            for (const E* q = a.p + (g.base + taps[kk].off + lo * step); t < hi; ++t, q += step) o[t] = static_cast<T>(*q);
          for (; t < g.n; ++t) o[t] = T(0);
        }
      }
    }
  }
}

// NHWC im2col: a panel's rows in groups of W consecutive k (gemm_micro_kernel's G = W). Each row's k
// walks runs of channels at one kernel tap, contiguous in x: copied in by vectors where a run covers a
// whole group, where a k-major panel would take a transposing copy (one scalar or one gather per value;
// that packing was half of a 16 -> 32 channel 14 x 14 layer's time, gathers included).
template <class T, class E>
index_t pack_a(const im2col_rows_ref<E>& a, index_t i0, index_t mc, index_t k0, index_t kc, T* out) {
  constexpr index_t MR = gemm_tile<T>::MR, W = gemm_tile<T>::W;
  const conv_dims& d = *a.d;
  if (d.Cg < 4 && !d.transposed) {
    pack_a_few_channels<T>(a, i0, mc, k0, kc, out);
    return 1; // k-major panels
  }
  const index_t OHW = d.OH * d.OW, kg = (kc + W - 1) / W * W;
  // Whole taps of whole vectors of channels (16 or 32 channels, the block starting at a tap): per row and
  // tap one bounds check and Cg / W vector copies. A stride-1 transposed convolution reads its input
  // as a convolution does, with the taps walked backwards: ih = oh + p - kh * d.
  if constexpr (std::is_same_v<T, E>) {
    const bool lin_h = !d.transposed || d.sh == 1, lin_w = !d.transposed || d.sw == 1;
    if (lin_h && lin_w && d.xc == 1 && d.Cg % W == 0 && k0 % d.Cg == 0 && kc % d.Cg == 0) {
      // (the geometry in locals: the vector stores may alias anything, so fields of d would be reloaded)
      const index_t Cg = d.Cg, KW = d.KW, H = d.H, Wd = d.W, OW = d.OW, OH = d.OH, xn = d.xn, xh = d.xh, xw = d.xw;
      const index_t tap0 = k0 / Cg, taps = kc / Cg;
      const index_t step_h = d.transposed ? -d.dh : d.dh, step_w = d.transposed ? -d.dw : d.dw;
      const index_t row_w = d.transposed ? 1 : d.sw; // input columns from one output column to the next
      index_t n = i0 / OHW, oh = i0 % OHW / OW, ow = i0 % OW; // row (n, oh, ow), walked without divisions
      for (index_t p = 0; p < mc; p += MR, out += MR * kg) {
        const index_t rows = std::min(MR, mc - p);
        // The panel's rows in runs along one output row (the same image and oh): per run and tap, the
        // input rows lie at one ih and consecutive columns, so the columns inside the image are one
        // range (no test per row) and the rest are the padding's zeros.
        for (index_t r = 0; r < rows;) {
          const index_t seg = std::min(rows - r, OW - ow);
          const E* img = a.p + n * xn;
          const index_t h0 = d.transposed ? oh + d.ph : oh * d.sh - d.ph, w0 = d.transposed ? ow + d.pw : ow * d.sw - d.pw;
          index_t kh = tap0 / KW, kw = tap0 % KW;
          T* dst = out + r * W;
          for (index_t t = 0; t < taps; ++t, dst += Cg * rows) {
            const index_t ih = h0 + kh * step_h, iw0 = w0 + kw * step_w;
            // rows s in [lo, hi) read iw0 + s * row_w inside [0, W)
            index_t lo = 0, hi = 0;
            if (ih >= 0 && ih < H && iw0 < Wd) {
              if (row_w == 1) { // (stride 1, the common case: no division per tap)
                lo = iw0 >= 0 ? 0 : std::min(seg, -iw0);
                hi = std::max(lo, std::min(seg, Wd - iw0));
              } else {
                lo = iw0 >= 0 ? 0 : std::min(seg, (-iw0 + row_w - 1) / row_w);
                hi = std::max(lo, std::min(seg, (Wd - iw0 + row_w - 1) / row_w));
              }
            }
            for (index_t s = 0; s < lo; ++s)
              for (index_t c = 0; c < Cg; c += W) batch<T>(T(0)).store_unaligned(dst + s * W + c * rows);
            if (lo < hi) { // (no pointer formed outside the image)
              const E* src = img + ih * xh + (iw0 + lo * row_w) * xw;
              for (index_t s = lo; s < hi; ++s, src += row_w * xw)
                for (index_t c = 0; c < Cg; c += W) batch<T>::load_unaligned(src + c).store_unaligned(dst + s * W + c * rows);
            }
            for (index_t s = hi; s < seg; ++s)
              for (index_t c = 0; c < Cg; c += W) batch<T>(T(0)).store_unaligned(dst + s * W + c * rows);
            if (++kw == KW) kw = 0, ++kh;
          }
          r += seg, ow += seg;
          if (ow == OW) {
            ow = 0;
            if (++oh == OH) oh = 0, ++n;
          }
        }
      }
      return W;
    }
  }
  for (index_t p = 0; p < mc; p += MR, out += MR * kg) {
    const index_t rows = std::min(MR, mc - p);
    for (index_t r = 0; r < rows; ++r) {
      const index_t row = i0 + p + r, img = row / OHW * d.xn, oh = row % OHW / d.OW, ow = row % d.OW;
      // Convolution: the window's corner, so that a tap's input position is one add away.
      const index_t ch = oh * d.sh - d.ph, cw = ow * d.sw - d.pw;
      conv_k_walk k(d, k0);
      for (index_t kk = 0; kk < kc;) {
        const index_t run = std::min(d.Cg - k.c, kc - kk);
        index_t ih, iw;
        if (!d.transposed) {
          ih = ch + k.kh * d.dh, iw = cw + k.kw * d.dw;
          if (ih >= d.H || iw >= d.W) ih = -1;
        } else {
          ih = d.ih(oh, k.kh), iw = d.iw(ow, k.kw);
        }
        const E* src = ih >= 0 && iw >= 0 ? a.p + img + ih * d.xh + iw * d.xw + k.c * d.xc : nullptr;
        for (index_t q = 0; q < run;) { // pieces of the run that stay inside one group
          const index_t pos = kk + q, j = pos % W, n = std::min(run - q, W - j);
          T* dst = out + (pos - j) * rows + r * W + j;
          if (!src) {
            for (index_t t = 0; t < n; ++t) dst[t] = T(0);
          } else if (d.xc == 1) {
            const E* s = src + q;
            if constexpr (std::is_same_v<T, E>)
              if (n == W) {
                batch<T>::load_unaligned(s).store_unaligned(dst);
                q += n;
                continue;
              }
            for (index_t t = 0; t < n; ++t) dst[t] = static_cast<T>(s[t]);
          } else {
            for (index_t t = 0; t < n; ++t) dst[t] = static_cast<T>(src[(q + t) * d.xc]);
          }
          q += n;
        }
        kk += run;
        k.c = 0;
        if (++k.kw == d.KW) k.kw = 0, ++k.kh;
      }
    }
  }
  return W;
}

// Convolution (not transposed): a k-row of the block is first built contiguously in a small buffer,
// one output row at a time (zeros, a shifted copy of the input row, zeros: loops the compiler
// vectorises), then dealt out to the panels with whole-vector copies. Writing the panels directly cost
// more in per-segment set-up than in copying for the short rows (14, 28) of small CNNs (measured with
// perf: pack was half the time of a 32->64 channel 14x14 layer).
template <class T, class E>
void pack_b_conv(const im2col_cols_ref<E>& b, index_t k0, index_t kc, index_t j0, index_t nc, T* out) {
  constexpr index_t NR = gemm_tile<T>::NR, max_nc = NR * gemm_config::max_nc_panels;
  const conv_dims& d = *b.d;
  alignas(default_alignment) T row[max_nc];
  const index_t padded = (nc + NR - 1) / NR * NR, s = d.sw;
  for (index_t j = nc; j < padded; ++j) row[j] = T(0);
  conv_k_walk k(d, k0);
  for (index_t kk = 0; kk < kc; ++kk, k.next()) {
    const E* plane = b.p + k.c * d.xc;
    // This tap reads iw = ow*s + dw: inside [0, W) for ow in [lo, hi).
    const index_t dw = k.kw * d.dw - d.pw, dh = k.kh * d.dh - d.ph;
    const index_t lo = std::min(d.OW, dw >= 0 ? index_t(0) : (-dw + s - 1) / s);
    const index_t hi = std::max(lo, std::min(d.OW, dw >= d.W ? index_t(0) : (d.W - dw + s - 1) / s));
    index_t oh = j0 / d.OW, ow = j0 % d.OW;
    for (index_t j = 0; j < nc; ++oh, ow = 0) {
      const index_t end = std::min(d.OW, ow + (nc - j)); // this output row's columns: [ow, end)
      T* r = row + j; // r[t - ow] for t in [ow, end)
      const index_t ih = oh * d.sh + dh;
      if (ih < 0 || ih >= d.H) {
        for (index_t t = 0; t < end - ow; ++t) r[t] = T(0);
      } else {
        const E* src = plane + ih * d.xh;
        const index_t a = std::clamp(lo, ow, end) - ow, z = std::clamp(hi, ow, end) - ow, n = end - ow;
        index_t t = 0;
        for (; t < a; ++t) r[t] = T(0);
        if (s == 1 && d.xw == 1) {
          const E* q = src + (ow + a + dw);
          if constexpr (std::is_same_v<E, T>) { // whole vectors: a library memcpy call costs more than these short runs
            for (; t + lanes<T> <= z; t += lanes<T>) batch<T>::load_unaligned(q + (t - a)).store_unaligned(r + t);
            // the rest as one more vector ending at z, over values already copied (a 14-wide row: two
            // vectors, not a vector and six scalars)
            if (t < z && z - a >= lanes<T>) {
              batch<T>::load_unaligned(q + (z - lanes<T> - a)).store_unaligned(r + z - lanes<T>);
              t = z;
            }
          }
          for (; t < z; ++t) r[t] = static_cast<T>(q[t - a]);
        } else {
          for (; t < z; ++t) r[t] = static_cast<T>(src[((ow + t) * s + dw) * d.xw]);
        }
        for (; t < n; ++t) r[t] = T(0);
      }
      j += end - ow;
    }
    for (index_t q = 0; q < padded; q += NR) {
      T* dst = out + q * kc + kk * NR;
#pragma GCC unroll 4
      for (index_t c = 0; c < NR; ++c) dst[c] = row[q + c];
    }
  }
}

template <class T, class E>
void pack_b(const im2col_cols_ref<E>& b, index_t k0, index_t kc, index_t j0, index_t nc, T* out) {
  constexpr index_t NR = gemm_tile<T>::NR;
  const conv_dims& d = *b.d;
  if (!d.transposed && nc <= NR * gemm_config::max_nc_panels) return pack_b_conv<T>(b, k0, kc, j0, nc, out);
  const index_t OW = d.OW, s = d.sw;
  const index_t padded = (nc + NR - 1) / NR * NR;
  conv_k_walk k(d, k0);
  for (index_t kk = 0; kk < kc; ++kk, k.next()) {
    const E* plane = b.p + k.c * d.xc;
    index_t oh = j0 / OW, ow = j0 % OW;
    // Segments of columns within one output row and one panel: one input row, read with the stride.
    for (index_t jj = 0; jj < nc;) {
      const index_t seg = std::min({OW - ow, nc - jj, NR - jj % NR});
      T* dst = out + jj / NR * kc * NR + kk * NR + jj % NR;
      const index_t ih = d.ih(oh, k.kh);
      if (ih < 0) {
        for (index_t t = 0; t < seg; ++t) dst[t] = T(0);
      } else if (!d.transposed) {
        const E* row = plane + ih * d.xh;
        // iw = iw0 + t*s is inside [0, W) for t in [lo, hi) (no division for stride 1).
        const index_t iw0 = ow * s - d.pw + k.kw * d.dw;
        const index_t lo = std::min(seg, iw0 >= 0 ? index_t(0) : s == 1 ? -iw0 : (-iw0 + s - 1) / s);
        const index_t hi = std::max(lo, std::min(seg, iw0 >= d.W ? index_t(0) : s == 1 ? d.W - iw0 : (d.W - iw0 + s - 1) / s));
        index_t t = 0;
        for (; t < lo; ++t) dst[t] = T(0);
        if (s == 1 && d.xw == 1)
          for (const E* src = row + iw0; t < hi; ++t) dst[t] = static_cast<T>(src[t]);
        else
          for (; t < hi; ++t) dst[t] = static_cast<T>(row[(iw0 + t * s) * d.xw]);
        for (; t < seg; ++t) dst[t] = T(0);
      } else {
        const E* row = plane + ih * d.xh;
        for (index_t t = 0; t < seg; ++t) {
          const index_t iw = d.iw(ow + t, k.kw);
          dst[t] = iw >= 0 ? static_cast<T>(row[iw * d.xw]) : T(0);
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
