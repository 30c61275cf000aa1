#pragma once
// A packed, cache-blocked GEMM on xsimd with a store epilogue. C = A B for one batch element: A is
// packed into MR-row panels and B into NR-column panels (any strides: a transposed operand costs
// nothing extra), an MR x NR register tile accumulates over a KC slice, and each MC x NC block of C
// is finished in a thread-local buffer before `epilogue(block, i0, j0)` writes it out — so a
// consumer such as relu(matmul(x, w) + b) is applied in the store, not in a second pass.
#include <memory>

#include "tenfold/cpu/rows.hpp"
#include "tenfold/cpu/thread_pool.hpp"

namespace tenfold::cpu {

// A strided matrix operand: element (i, k) at p[i * rs + k * cs].
template <class E>
struct matrix_ref {
  const E* p;
  index_t rs, cs;
};

template <class T>
struct gemm_shape {
  static constexpr index_t W = lanes<T>;
  static constexpr index_t MR = 6, NR = 2 * W;      // 12 accumulators + 2 B vectors + 1 A broadcast
  static constexpr index_t KC = 256;                // a KC x NR panel of B stays in L1
  static constexpr index_t MC = 16 * MR, NC = 8 * NR; // an MC x KC block of A in L2
};

template <class T>
struct gemm_buffers {
  using G = gemm_shape<T>;
  T* a;     // MC x KC, MR-row panels
  T* b;     // KC x NC, NR-column panels
  T* c;     // MC x NC, row-major, the block being finished
  // One set per thread, made on first use and kept: evaluation allocates nothing after warm-up.
  static gemm_buffers& local() {
    struct holder {
      std::unique_ptr<T[]> storage{new T[G::MC * G::KC + G::KC * G::NC + G::MC * G::NC + 3 * 16]};
      gemm_buffers bufs;
      holder() {
        T* base = storage.get();
        auto align = [](T* p) { return reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(p) + 63) & ~std::uintptr_t(63)); };
        bufs.a = align(base);
        bufs.b = align(bufs.a + G::MC * G::KC);
        bufs.c = align(bufs.b + G::KC * G::NC);
      }
    };
    static thread_local holder h;
    return h.bufs;
  }
};

template <class T, class E>
void pack_a(const matrix_ref<E>& a, index_t i0, index_t mc, index_t k0, index_t kc, T* out) {
  constexpr index_t MR = gemm_shape<T>::MR;
  for (index_t p = 0; p < mc; p += MR)
    for (index_t k = 0; k < kc; ++k)
      for (index_t r = 0; r < MR; ++r)
        *out++ = p + r < mc ? static_cast<T>(a.p[(i0 + p + r) * a.rs + (k0 + k) * a.cs]) : T(0);
}

template <class T, class E>
void pack_b(const matrix_ref<E>& b, index_t k0, index_t kc, index_t j0, index_t nc, T* out) {
  constexpr index_t NR = gemm_shape<T>::NR;
  for (index_t q = 0; q < nc; q += NR)
    for (index_t k = 0; k < kc; ++k) {
      const E* src = b.p + (k0 + k) * b.rs + (j0 + q) * b.cs;
      if (b.cs == 1 && q + NR <= nc && std::is_same_v<E, T>) {
        for (index_t c = 0; c < NR; ++c) out[c] = static_cast<T>(src[c]);
      } else {
        for (index_t c = 0; c < NR; ++c) out[c] = q + c < nc ? static_cast<T>(src[c * b.cs]) : T(0);
      }
      out += NR;
    }
}

// C[MR x NR] (row stride ldc) += Apanel · Bpanel over kc.
template <class T>
TENFOLD_INLINE void micro_kernel(const T* a, const T* b, index_t kc, T* c, index_t ldc) {
  using G = gemm_shape<T>;
  using B = batch<T>;
  B acc[G::MR][2];
  for (index_t r = 0; r < G::MR; ++r) acc[r][0] = B::load_aligned(c + r * ldc), acc[r][1] = B::load_aligned(c + r * ldc + G::W);
  for (index_t k = 0; k < kc; ++k) {
    const B b0 = B::load_aligned(b + k * G::NR), b1 = B::load_aligned(b + k * G::NR + G::W);
    for (index_t r = 0; r < G::MR; ++r) {
      const B av(a[k * G::MR + r]);
      acc[r][0] = xsimd::fma(av, b0, acc[r][0]);
      acc[r][1] = xsimd::fma(av, b1, acc[r][1]);
    }
  }
  for (index_t r = 0; r < G::MR; ++r) acc[r][0].store_aligned(c + r * ldc), acc[r][1].store_aligned(c + r * ldc + G::W);
}

// One batch element: C (M x N) = A (M x K) B (K x N); epilogue(const T* block, ldc, i0, mc, j0, nc).
// `tasks` selects which MC x NC blocks this call computes (for splitting across threads).
template <class T, class EA, class EB, class Epilogue>
void gemm_blocks(const matrix_ref<EA>& a, const matrix_ref<EB>& b, index_t M, index_t N, index_t K, index_t t0, index_t t1,
                 const Epilogue& epilogue) {
  using G = gemm_shape<T>;
  auto& buf = gemm_buffers<T>::local();
  const index_t col_blocks = (N + G::NC - 1) / G::NC;
  for (index_t t = t0; t < t1; ++t) {
    const index_t i0 = t / col_blocks * G::MC, j0 = t % col_blocks * G::NC;
    const index_t mc = std::min(G::MC, M - i0), nc = std::min(G::NC, N - j0);
    const index_t mp = (mc + G::MR - 1) / G::MR * G::MR, np = (nc + G::NR - 1) / G::NR * G::NR;
    for (index_t i = 0; i < mp; ++i)
      for (index_t j = 0; j < np; ++j) buf.c[i * G::NC + j] = T(0);
    for (index_t k0 = 0; k0 < K; k0 += G::KC) {
      const index_t kc = std::min(G::KC, K - k0);
      pack_a<T>(a, i0, mc, k0, kc, buf.a);
      pack_b<T>(b, k0, kc, j0, nc, buf.b);
      for (index_t q = 0; q < np; q += G::NR)
        for (index_t p = 0; p < mp; p += G::MR) micro_kernel<T>(buf.a + p * kc, buf.b + q * kc, kc, buf.c + p * G::NC + q, G::NC);
    }
    epilogue(static_cast<const T*>(buf.c), G::NC, i0, mc, j0, nc);
  }
}

template <class T>
index_t gemm_block_count(index_t M, index_t N) {
  using G = gemm_shape<T>;
  return ((M + G::MC - 1) / G::MC) * ((N + G::NC - 1) / G::NC);
}
} // namespace tenfold::cpu
