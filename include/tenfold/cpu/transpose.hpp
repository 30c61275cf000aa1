#pragma once
// Square in-register transposes of W batches (W = lanes), permuting loads for small strides, and
// streaming stores: the pieces that let transposed, reversed and subsampled operands be read with
// full-width contiguous loads. x86 versions use intrinsics; other targets go through a stack tile.
#include "tenfold/core/xsimd.hpp"

#include "tenfold/core/config.hpp"

namespace tenfold::cpu {

template <class L, std::size_t W>
TENFOLD_INLINE void transpose_square(std::array<xsimd::batch<L>, W>& r) {
  using B = xsimd::batch<L>;
  static_assert(B::size == W);
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<L, float> && W == 16) {
    __m512 v[16], t[16];
    for (int i = 0; i < 16; ++i) v[i] = r[i];
    for (int i = 0; i < 16; i += 2) t[i] = simd::unpacklo(v[i], v[i + 1]), t[i + 1] = simd::unpackhi(v[i], v[i + 1]);
    for (int i = 0; i < 16; i += 4) {
      v[i] = simd::shuffle<0x44>(t[i], t[i + 2]), v[i + 1] = simd::shuffle<0xEE>(t[i], t[i + 2]);
      v[i + 2] = simd::shuffle<0x44>(t[i + 1], t[i + 3]), v[i + 3] = simd::shuffle<0xEE>(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 8; ++i) {
      const int a = (i / 4) * 8 + i % 4;
      t[a] = simd::shuffle_lanes<0x88>(v[a], v[a + 4]), t[a + 4] = simd::shuffle_lanes<0xDD>(v[a], v[a + 4]);
    }
    for (int i = 0; i < 8; ++i) r[i] = simd::shuffle_lanes<0x88>(t[i], t[i + 8]), r[i + 8] = simd::shuffle_lanes<0xDD>(t[i], t[i + 8]);
    return;
  }
  if constexpr (std::is_same_v<L, double> && W == 8) {
    __m512d v[8], t[8];
    for (int i = 0; i < 8; ++i) v[i] = r[i];
    for (int i = 0; i < 8; i += 2) t[i] = simd::unpacklo(v[i], v[i + 1]), t[i + 1] = simd::unpackhi(v[i], v[i + 1]);
    for (int i = 0; i < 8; i += 4) {
      v[i] = simd::shuffle_lanes<0x88>(t[i], t[i + 2]), v[i + 2] = simd::shuffle_lanes<0xDD>(t[i], t[i + 2]);
      v[i + 1] = simd::shuffle_lanes<0x88>(t[i + 1], t[i + 3]), v[i + 3] = simd::shuffle_lanes<0xDD>(t[i + 1], t[i + 3]);
    }
    for (int i = 0; i < 4; ++i) r[i] = simd::shuffle_lanes<0x88>(v[i], v[i + 4]), r[i + 4] = simd::shuffle_lanes<0xDD>(v[i], v[i + 4]);
    return;
  }
#endif
  alignas(default_alignment) L tile[W][W];
  for (std::size_t i = 0; i < W; ++i) r[i].store_aligned(tile[i]);
  for (std::size_t i = 0; i < W; ++i) {
    alignas(default_alignment) L col[W];
    for (std::size_t k = 0; k < W; ++k) col[k] = tile[k][i];
    r[i] = B::load_aligned(col);
  }
}

// row(j)[r] = src[r * lds + j] for r < rows, j < cols: a matrix transposed, its output rows wherever
// `row` puts them (a padded image's positions, say). Whole W x W tiles in registers (transpose_square),
// the edges one value at a time.
template <class T, class Row>
void transpose_copy(const T* src, index_t lds, index_t rows, index_t cols, const Row& row) {
  using B = xsimd::batch<T>;
  constexpr index_t W = index_t(B::size);
  const index_t rv = rows / W * W, cv = cols / W * W;
  for (index_t r0 = 0; r0 < rv; r0 += W) {
    for (index_t j0 = 0; j0 < cv; j0 += W) {
      std::array<B, std::size_t(W)> t;
      for (index_t q = 0; q < W; ++q) t[std::size_t(q)] = B::load_unaligned(src + (r0 + q) * lds + j0);
      transpose_square(t);
      for (index_t q = 0; q < W; ++q) t[std::size_t(q)].store_unaligned(row(j0 + q) + r0);
    }
    for (index_t j = cv; j < cols; ++j) {
      T* o = row(j) + r0;
      for (index_t q = 0; q < W; ++q) o[q] = src[(r0 + q) * lds + j];
    }
  }
  for (index_t j = 0; j < cols; ++j) {
    T* o = row(j);
    for (index_t r = rv; r < rows; ++r) o[r] = src[r * lds + j];
  }
}

// A store that bypasses the caches (no read-for-ownership) where the ISA has one and the address is
// aligned: for outputs far larger than the last-level cache.
template <class L>
TENFOLD_INLINE void store_stream(L* p, const xsimd::batch<L>& b) {
#if defined(__AVX512F__)
  if constexpr (xsimd::batch<L>::size * sizeof(L) == 64 && std::is_same_v<L, float>) {
    if ((reinterpret_cast<std::uintptr_t>(p) & 63) == 0) return _mm512_stream_ps(p, b);
  } else if constexpr (xsimd::batch<L>::size * sizeof(L) == 64 && std::is_same_v<L, double>) {
    if ((reinterpret_cast<std::uintptr_t>(p) & 63) == 0) return _mm512_stream_pd(p, b);
  }
#endif
  b.store_unaligned(p);
}
// W elements p[0], p[S], ..., p[(W-1) S] for S = 2 or -1 from contiguous loads and one permute, where
// AVX-512 has the permute; `false` when it does not (the caller falls back to a gather).
template <class L, index_t S>
inline constexpr bool has_permuting_load =
#if defined(__AVX512F__)
    (S == 2 || S == -1) && (std::is_same_v<L, float> || std::is_same_v<L, double>) && xsimd::batch<L>::size * sizeof(L) == 64;
#else
    false;
#endif

template <class L, index_t S>
TENFOLD_INLINE xsimd::batch<L> permuting_load([[maybe_unused]] const L* p) { // (unused where there is no such load)
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<L, float>) {
    if constexpr (S == 2) {
      const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
      // The last lane of the second load is masked off: p[31] may lie past the operand's end.
      return _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_maskz_loadu_ps(0x7FFF, p + 16));
    } else {
      const __m512i reverse = _mm512_setr_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
      return simd::permute(reverse, _mm512_loadu_ps(p - 15));
    }
  } else {
    if constexpr (S == 2) {
      const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
      return _mm512_permutex2var_pd(_mm512_loadu_pd(p), even, _mm512_maskz_loadu_pd(0x7F, p + 8));
    } else {
      const __m512i reverse = _mm512_setr_epi64(7, 6, 5, 4, 3, 2, 1, 0);
      return simd::permute(reverse, _mm512_loadu_pd(p - 7));
    }
  }
#else
  static_assert(S != S, "no permuting load on this target");
#endif
}

TENFOLD_INLINE void stream_fence() {
#if defined(__AVX512F__) || defined(__AVX2__)
  _mm_sfence();
#endif
}
} // namespace tenfold::cpu
