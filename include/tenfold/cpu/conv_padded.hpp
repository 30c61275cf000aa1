#pragma once
// NHWC im2col read in place: over a copy of the input with its padding written out, the im2col row of
// output position (n, oh, ow) at tap (kh, kw) and channel c is
//     A[(n, oh, ow), (kh, kw, c)] = xp[n, oh * sh + kh * dh, ow * sw + kw * dw, c]     (padded coordinates)
// so a panel of rows along one output row is a strided matrix with overlapping rows: row r of the panel
// starts sw * Cg values after row r - 1, and a group of k (one tap's run of channels) is one offset from
// the panel's first value. The micro-kernels read it there (gemm_micro_kernel's Lda > 0): no panel is
// packed; the copy is one pass over the input where packing copied each value KH * KW times. The values
// and their order in each sum are the packed panels', so the bits are the same.
//
// A stride-1 transposed convolution reads its input the same way with the taps walked backwards
// (ih = oh + ph - kh * dh). Panels end at the end of an output row, so this pays where an output row is
// (nearly) whole panels: conv_reads_a_in_place.
#include <algorithm>
#include <cstring>
#include <utility> // std::pair

#include "tenfold/cpu/conv_pack.hpp"
#include "tenfold/cpu/transpose.hpp"

namespace tenfold::cpu {

// The padded copy of the input (images [n0, n1) of a group's channels), the k slice's group offsets and
// a transposed block of C, per thread.
template <class T>
struct conv_workspace {
  struct pad_tag;
  struct offsets_tag;
  struct turned_tag;
  scratch_buffer<T, pad_tag> pad;
  scratch_buffer<index_t, offsets_tag> offsets;
  scratch_buffer<T, turned_tag> turned; // a block of C transposed (cpu/conv.hpp: NCHW in NHWC's order)
  static conv_workspace& local() {
    [[maybe_unused]] static const bool registered = (register_scratch([] {
                                                       auto& w = local();
                                                       w.pad.grow_to_largest(), w.offsets.grow_to_largest(),
                                                           w.turned.grow_to_largest();
                                                     }),
                                                     true);
    static thread_local conv_workspace w;
    return w;
  }
};

// Lda: the row stride (sw * Cg; Cg for a transposed convolution, whose rows step by one column); Group:
// k values per offset (W where the channels are whole vectors, else 1).
template <class T, index_t Lda, index_t Group>
struct im2col_padded_ref {
  static constexpr index_t lda = Lda, group = Group;
  const T* p; // image n0 of the copy, [hp, wp, Cg] per image
  index_t n0;
  const conv_dims* d;
  index_t hp, wp;     // the copy's extents
  index_t top, left;  // its rows and columns before the input's first
};

// Where tap (kh, kw) of output (oh, ow) reads, in the copy's coordinates: origin(o) + tap(k).
struct padded_axis {
  index_t step, origin, tap; // o * step + origin + k * tap
  static padded_axis of(index_t s, index_t p, index_t dil, index_t before, bool transposed) {
    return transposed ? padded_axis{1, before + p, -dil} : padded_axis{s, before - p, dil};
  }
  // Rows (columns) of padding the copy needs before and after the input's extent n, for outputs [0, on) and taps [0, k).
  static std::pair<index_t, index_t> padding(index_t n, index_t on, index_t k, index_t s, index_t p, index_t dil, bool transposed) {
    const index_t lo = transposed ? p - (k - 1) * dil : -p, hi = transposed ? on - 1 + p : (on - 1) * s - p + (k - 1) * dil;
    return {std::max<index_t>(0, -lo), std::max<index_t>(0, hi + 1 - n)};
  }
};

// Whether convolution Cv reads A in place on this ISA: NHWC, element type T, not 1x1-pointwise (that reads
// x as a plain matrix already), a transposed one only at stride 1, channels in whole vectors or fewer than
// 4 (group 1), KC slices of whole groups, and output rows that are at least 7/8 whole panels (the panels
// stop at the end of a row: OW = 14 or 28 with MR = 14; 28 with MR = 6 is 28/30).
// Hwc: k runs over (kh, kw, c) (an NHWC convolution, or an NCHW one computed in NHWC's order: cpu/conv.hpp).
template <class T, class Cv, bool Hwc = Cv::nhwc>
constexpr bool conv_reads_a_in_place(const gemm_config& cfg) {
  constexpr conv_geometry G = Cv::geometry;
  constexpr index_t W = gemm_tile<T>::W, MR = gemm_tile<T>::MR;
  using EX = std::remove_const_t<typename Cv::x_type::element_type>;
  if constexpr (!Hwc || !std::is_same_v<EX, T> || (G.transposed && (G.stride_h != 1 || G.stride_w != 1))) return false;
  else {
    constexpr index_t panels = (Cv::OW + MR - 1) / MR;
    const bool whole = Cv::Cg % W == 0 && cfg.kc % W == 0;
    return (whole || Cv::Cg < 4) && 8 * Cv::OW >= 7 * panels * MR && Cv::KH * Cv::KW > 1;
  }
}
template <class T, class Cv>
constexpr index_t conv_a_group = Cv::Cg % gemm_tile<T>::W == 0 ? gemm_tile<T>::W : 1;
template <class Cv>
constexpr index_t conv_a_lda = Cv::geometry.transposed ? Cv::Cg : Cv::geometry.stride_w * Cv::Cg;

// Copies images [n0, n1) of x (a group's first channel at x) into the calling thread's pad buffer with
// the padding the windows need written as zeros, and returns A over it for rows of those images.
template <class T, index_t Lda, index_t Group>
im2col_padded_ref<T, Lda, Group> pad_images(const T* x, const conv_dims& d, index_t n0, index_t n1) {
  const auto [top, bottom] = padded_axis::padding(d.H, d.OH, d.KH, d.sh, d.ph, d.dh, d.transposed);
  const auto [left, right] = padded_axis::padding(d.W, d.OW, d.KW, d.sw, d.pw, d.dw, d.transposed);
  const index_t C = d.Cg, hp = top + d.H + bottom, wp = left + d.W + right, row = wp * C;
  T* out = conv_workspace<T>::local().pad.get(std::max<index_t>(1, (n1 - n0) * hp * row));
  // Channels first (NCHW, each channel's plane contiguous): a plane [C, H * W] transposed into the rows.
  const bool planes = d.xw == 1 && d.xh == d.W && C > 1;
  for (index_t n = n0; n < n1; ++n) {
    T* img = out + (n - n0) * hp * row;
    std::fill_n(img, top * row, T(0));
    for (index_t h = 0; h < d.H; ++h) {
      T* o = img + (top + h) * row;
      std::fill_n(o, left * C, T(0));
      const T* src = x + n * d.xn + h * d.xh;
      if (!planes) {
        if (d.xc == 1 && d.xw == C) std::memcpy(o + left * C, src, sizeof(T) * std::size_t(d.W * C));
        else
          for (index_t w = 0; w < d.W; ++w)
            for (index_t c = 0; c < C; ++c) o[(left + w) * C + c] = src[w * d.xw + c * d.xc];
      } // (else the plane's transpose below fills the row)
      std::fill_n(o + (left + d.W) * C, right * C, T(0));
    }
    std::fill_n(img + (top + d.H) * row, bottom * row, T(0));
    if (planes)
      transpose_copy(x + n * d.xn, d.xc, C, d.H * d.W,
                     [&, t = top, l = left](index_t p) { return img + ((t + p / d.W) * wp + l + p % d.W) * C; }); // (clang: no structured bindings in captures)
  }
  return {out, n0, &d, hp, wp, top, left};
}

// The offsets of k slice [k0, k0 + kc)'s groups from a panel's first value, in the calling thread's buffer.
template <class T, index_t Lda, index_t Group>
const index_t* a_offsets(const im2col_padded_ref<T, Lda, Group>& a, index_t k0, index_t kc) {
  const conv_dims& d = *a.d;
  const padded_axis h = padded_axis::of(d.sh, d.ph, d.dh, a.top, d.transposed), w = padded_axis::of(d.sw, d.pw, d.dw, a.left, d.transposed);
  index_t* off = conv_workspace<T>::local().offsets.get((kc + Group - 1) / Group);
  for (index_t k = k0, g = 0; k < k0 + kc; k += Group, ++g) {
    const index_t c = k % d.Cg, tap = k / d.Cg;
    off[g] = (tap / d.KW * h.tap * a.wp + tap % d.KW * w.tap) * d.Cg + c;
  }
  return off;
}

// The first value of the panel starting at `row`, and its rows: at most `most`, and none past the end of
// the output row.
template <class T, index_t Lda, index_t Group>
const T* a_panel(const im2col_padded_ref<T, Lda, Group>& a, index_t row, index_t most, index_t& rows) {
  const conv_dims& d = *a.d;
  const index_t OHW = d.OH * d.OW, n = row / OHW, oh = row % OHW / d.OW, ow = row % d.OW;
  const padded_axis h = padded_axis::of(d.sh, d.ph, d.dh, a.top, d.transposed), w = padded_axis::of(d.sw, d.pw, d.dw, a.left, d.transposed);
  rows = std::min(most, d.OW - ow);
  return a.p + (((n - a.n0) * a.hp + oh * h.step + h.origin) * a.wp + ow * w.step + w.origin) * d.Cg;
}
} // namespace tenfold::cpu
