#pragma once
// GEMM: matmul at the root of an assignment, with the elementwise consumers around it (plan::gemm_root_v:
// bias, activation, residual, scaling) applied to each finished tile before it is stored — the same
// fused epilogue as the CPU path. Batched over the output's leading axes (operand batch axes broadcast).
//  - bf16 x bf16 and f16 x f16: tensor cores (wmma 16x16x16), f32 accumulation. 128x128x32 block tiles,
//    8 warps of 64x32, the next K slice loaded into registers while the current one is multiplied.
//    (On Hopper built for sm_90a, cuda/gemm_sm90.hpp's TMA + wgmma kernel takes these instead.)
//  - f32 x f32 with cuda::tf32_matmul() on: the same kernel with TF32 inputs (wmma 16x16x8, inputs
//    rounded to a 10-bit mantissa, f32 accumulation); off by default, as it changes results.
//  - anything else (f32, f64, integers, mixed types): a tiled SIMT kernel in the compute type,
//    128x128x8 tiles, 8x8 outputs per thread, accumulating in the compute type as the CPU does.
// Operands are device leaves with any static strides (a transposed weight is read in place); tiles are
// read with 16-byte loads where the operand's inner axis is contiguous and aligned.
#include <cuda_runtime.h>
#include <mma.h>

#include "tenfold/core/matmul_node.hpp"
#include "tenfold/cuda/elementwise.hpp"
#include "tenfold/plan/fusion.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::cuda::detail {

// The matmul (or convolution) inside a GEMM root (the root itself, or its one through elementwise nodes).
template <class N>
struct gemm_of {
  using type = N;
};
template <class N>
  requires tenfold::detail::is_map_node_v<N>
struct gemm_of<N> {
  template <class... C>
  static auto pick(tenfold::detail::tuple<C...>*) {
    return std::type_identity<typename gemm_of<std::tuple_element_t<first_matmul<C...>(), std::tuple<C...>>>::type>{};
  }
  template <class... C>
  static constexpr std::size_t first_matmul() {
    constexpr bool has[] = {(plan::epilogue_matmuls<C>() == 1)...};
    for (std::size_t i = 0; i < sizeof...(C); ++i)
      if (has[i]) return i;
    return 0;
  }
  using type = typename decltype(pick(static_cast<decltype(N::args)*>(nullptr)))::type;
};
template <class N>
using gemm_of_t = typename gemm_of<N>::type;

template <class N, std::size_t... I>
__device__ const gemm_of_t<N>& find_gemm_in(const N& n, std::index_sequence<I...>);

template <class N>
__device__ const gemm_of_t<N>& find_gemm(const N& n) {
  if constexpr (plan::is_gemm_driven_v<N>) return n;
  else return find_gemm_in(n, std::make_index_sequence<tenfold::detail::tuple_size_v<decltype(N::args)>>{});
}
template <class N, std::size_t... I>
__device__ const gemm_of_t<N>& find_gemm_in(const N& n, std::index_sequence<I...>) {
  using Args = decltype(N::args);
  return find_gemm(tenfold::detail::get<gemm_of<N>::template first_matmul<tenfold::detail::tuple_element_t<I, Args>...>()>(n.args));
}

// The same, on the host (for the pointer checks before a launch).
template <class N>
const gemm_of_t<N>& find_gemm_host(const N& n) {
  if constexpr (plan::is_gemm_driven_v<N>) return n;
  else
    return [&]<std::size_t... I>(std::index_sequence<I...>) -> const gemm_of_t<N>& {
      return find_gemm_host(tenfold::detail::get<gemm_of<N>::template first_matmul<tenfold::detail::tuple_element_t<I, decltype(N::args)>...>()>(n.args));
    }(std::make_index_sequence<tenfold::detail::tuple_size_v<decltype(N::args)>>{});
}

// The root's value at idx, with the matmul's element there being `acc`.
template <class N, class A>
__device__ __forceinline__ compute_t<typename N::value_type> epilogue_value(const N& n, const index_t* idx, A acc) {
  using V = compute_t<typename N::value_type>;
  if constexpr (plan::is_gemm_driven_v<N>) return static_cast<V>(acc);
  else if constexpr (tenfold::detail::is_map_node_v<N> && plan::epilogue_matmuls<N>() == 1)
    return tenfold::detail::unpack([&](const auto&... c) { return V(N::op_type::template apply<typename N::value_type>(epilogue_value(c, idx, acc)...)); }, n.args);
  else return n.at(idx);
}

// Batch b of the output: its leading index, and the operands' element offsets there.
template <class Mm, class S>
struct gemm_batch {
  index_t idx[S::rank];
  index_t a_base, b_base;
  __device__ gemm_batch(const Mm&, index_t b) {
    constexpr int R = S::rank;
    index_t rest = b;
    for (int i = R - 3; i >= 0; --i) {
      idx[i] = rest % tenfold::detail::extent<S>(i);
      rest /= tenfold::detail::extent<S>(i);
    }
    idx[R - 2] = idx[R - 1] = 0;
    using CA = typename Mm::a_type;
    using CB = typename Mm::b_type;
    index_t ia[CA::rank], ib[CB::rank];
    Mm::template operand_index<typename CA::shape_type>(idx, 0, 0, ia);
    Mm::template operand_index<typename CB::shape_type>(idx, 0, 0, ib);
    a_base = CA::offset_of(ia);
    b_base = CB::offset_of(ib);
  }
};

template <class Mm>
struct gemm_dims {
  using CA = typename Mm::a_type;
  using CB = typename Mm::b_type;
  static constexpr index_t M = Mm::M, N = Mm::N, K = Mm::K;
  static constexpr index_t a_m = CA::strides[CA::rank - 2], a_k = CA::strides[CA::rank - 1];
  static constexpr index_t b_k = CB::strides[CB::rank - 2], b_n = CB::strides[CB::rank - 1];
  static constexpr index_t batches = Mm::shape_type::size / (M * N > 0 ? M * N : 1);
};

// ---- tensor cores --------------------------------------------------------------------------------
template <class T>
inline constexpr bool tensor_core_type_v = std::is_same_v<T, bf16> || std::is_same_v<T, f16>;
// What the wmma fragments load from shared memory: the CUDA 16-bit types, or float (TF32).
template <class T>
using wmma_type = std::conditional_t<std::is_same_v<T, bf16>, __nv_bfloat16, std::conditional_t<std::is_same_v<T, f16>, __half, float>>;

} // namespace tenfold::cuda::detail

namespace tenfold::cuda {
// f32 GEMMs on tensor cores with TF32 inputs (10-bit mantissa, f32 accumulation): several times
// faster than the exact SIMT kernel, about 1e-3 relative error. Off by default (results change);
// the same switch as PyTorch's torch.backends.cuda.matmul.allow_tf32. Set it before the GEMM runs.
inline bool& tf32_matmul() {
  static bool on = false;
  return on;
}
} // namespace tenfold::cuda

namespace tenfold::cuda::detail {
// f32 x f32: tensor cores only through TF32, by choice at run time.
template <class N>
inline constexpr bool tf32_candidate_v = std::is_same_v<std::remove_const_t<typename gemm_of_t<N>::a_type::value_type>, float> &&
                                         std::is_same_v<std::remove_const_t<typename gemm_of_t<N>::b_type::value_type>, float>;

namespace tc {
inline constexpr int BM = 128, BN = 128, BK = 32, threads = 256, pad = 8;
inline constexpr int a_ld = BK + pad, b_ld = BN + pad; // padding breaks smem bank conflicts on wmma loads
inline constexpr int a_elems = BM * BK / threads, b_elems = BK * BN / threads; // per thread: 16 each
} // namespace tc

// Can the operand's rows be read 16 bytes at a time? Its inner axis is contiguous and every row starts
// 16-byte aligned (every other stride and the offset are multiples of 16 bytes' worth of elements; the
// base pointer's alignment is checked on the host).
template <class L>
constexpr bool vector_rows() {
  constexpr index_t v = 16 / sizeof(typename L::value_type);
  bool ok = L::strides[L::rank - 1] == 1 && L::offset % v == 0;
  for (int i = 0; i + 1 < L::rank; ++i) ok = ok && L::strides[i] % v == 0;
  return ok;
}
template <class L>
inline constexpr bool vector_rows_v = vector_rows<L>();

// One thread's share of a K slice of A (BM x BK, k fastest) and B (BK x BN, n fastest), in registers:
// 16 elements of each, `chunks` 16-byte vectors.
template <class T>
struct tc_stage {
  static constexpr int chunks = int(tc::a_elems * sizeof(T) / 16);
  T a[tc::a_elems], b[tc::b_elems];
};

template <class Mm, class T>
__device__ __forceinline__ void tc_fetch(const Mm& mm, const gemm_batch<Mm, typename Mm::shape_type>& bt, index_t m0, index_t n0,
                                         index_t k0, tc_stage<T>& st) {
  using G = gemm_dims<Mm>;
  const T* pa = tenfold::detail::get<0>(mm.args).data() + bt.a_base;
  const T* pb = tenfold::detail::get<1>(mm.args).data() + bt.b_base;
  const int t = threadIdx.x;
  // A: thread t covers row t / 2, columns (t % 2) * 16 .. +16; contiguous in k when a_k == 1.
  {
    const index_t m = m0 + t / 2, k = k0 + (t % 2) * 16;
    constexpr bool vec = vector_rows_v<typename Mm::a_type>;
    if (vec && m < G::M && k + 16 <= G::K) {
      const uint4* src = reinterpret_cast<const uint4*>(pa + m * G::a_m + k);
#pragma unroll
      for (int c = 0; c < tc_stage<T>::chunks; ++c) reinterpret_cast<uint4*>(st.a)[c] = src[c];
    } else {
#pragma unroll
      for (int j = 0; j < tc::a_elems; ++j)
        st.a[j] = (m < G::M && k + j < G::K) ? pa[m * G::a_m + (k + j) * G::a_k] : T(0.0f);
    }
  }
  // B: thread t covers row t / 8, columns (t % 8) * 16 .. +16; contiguous in n when b_n == 1.
  {
    const index_t k = k0 + t / 8, n = n0 + (t % 8) * 16;
    constexpr bool vec = vector_rows_v<typename Mm::b_type>;
    if (vec && k < G::K && n + 16 <= G::N) {
      const uint4* src = reinterpret_cast<const uint4*>(pb + k * G::b_k + n);
#pragma unroll
      for (int c = 0; c < tc_stage<T>::chunks; ++c) reinterpret_cast<uint4*>(st.b)[c] = src[c];
    } else {
#pragma unroll
      for (int j = 0; j < tc::b_elems; ++j)
        st.b[j] = (k < G::K && n + j < G::N) ? pb[k * G::b_k + (n + j) * G::b_n] : T(0.0f);
    }
  }
}

template <class T>
__device__ __forceinline__ void tc_store(const tc_stage<T>& st, T* as, T* bs) {
  const int t = threadIdx.x;
  uint4* da = reinterpret_cast<uint4*>(as + (t / 2) * tc::a_ld + (t % 2) * 16);
  uint4* db = reinterpret_cast<uint4*>(bs + (t / 8) * tc::b_ld + (t % 8) * 16);
#pragma unroll
  for (int c = 0; c < tc_stage<T>::chunks; ++c) {
    da[c] = reinterpret_cast<const uint4*>(st.a)[c];
    db[c] = reinterpret_cast<const uint4*>(st.b)[c];
  }
}

struct tensor_core_body {
  static constexpr int max_threads = tc::threads;
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& root);
};
template <class Dst, class N>
__device__ void tensor_core_body::run(const Dst& dst, const N& root) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  namespace wmma = nvcuda::wmma;
  using Mm = gemm_of_t<N>;
  using T = typename Mm::a_type::value_type;
  using W = wmma_type<T>;
  constexpr bool tf32 = std::is_same_v<W, float>;
  using P = std::conditional_t<tf32, wmma::precision::tf32, W>; // the fragments' element precision
  constexpr int WK = tf32 ? 8 : 16;                              // k of one wmma
  using G = gemm_dims<Mm>;
  using S = typename N::shape_type;
  using D = typename Dst::value_type;
  constexpr int R = S::rank;
  // A and B slices while multiplying; reused as per-warp 16x16 float staging for the epilogue.
  __shared__ alignas(128) T as[tc::BM * tc::a_ld];
  __shared__ alignas(128) T bs[tc::BK * tc::b_ld];
  const Mm& mm = find_gemm(root);
  const gemm_batch<Mm, S> bt(mm, blockIdx.z);
  const index_t m0 = index_t(blockIdx.y) * tc::BM, n0 = index_t(blockIdx.x) * tc::BN;
  const int warp = threadIdx.x / warp_size, wm = warp / 4, wn = warp % 4; // 2 x 4 warps, 64 x 32 each

  wmma::fragment<wmma::accumulator, 16, 16, WK, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  tc_stage<T> next;
  tc_fetch(mm, bt, m0, n0, 0, next);
  for (index_t k0 = 0; k0 < G::K; k0 += tc::BK) {
    __syncthreads(); // the previous slice is no longer read
    tc_store(next, as, bs);
    __syncthreads();
    if (k0 + tc::BK < G::K) tc_fetch(mm, bt, m0, n0, k0 + tc::BK, next); // in flight while we multiply
#pragma unroll
    for (int kk = 0; kk < tc::BK; kk += WK) {
      wmma::fragment<wmma::matrix_a, 16, 16, WK, P, wmma::row_major> fa[4];
      wmma::fragment<wmma::matrix_b, 16, 16, WK, P, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        wmma::load_matrix_sync(fa[i], reinterpret_cast<const W*>(as + (wm * 64 + i * 16) * tc::a_ld + kk), tc::a_ld);
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wmma::load_matrix_sync(fb[j], reinterpret_cast<const W*>(bs + kk * tc::b_ld + wn * 32 + j * 16), tc::b_ld);
      if constexpr (tf32) { // round the loaded f32 values to TF32 (the instruction reads 10 mantissa bits)
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int e = 0; e < fa[i].num_elements; ++e) fa[i].x[e] = wmma::__float_to_tf32(fa[i].x[e]);
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int e = 0; e < fb[j].num_elements; ++e) fb[j].x[e] = wmma::__float_to_tf32(fb[j].x[e]);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
  }
  __syncthreads();
  // Epilogue: each warp stages one 16x16 accumulator tile at a time in shared memory (1 KiB per warp,
  // carved from the A slice), then its lanes apply the root and store 8 elements each.
  float* stage = reinterpret_cast<float*>(as) + warp * 256;
  index_t idx[R];
  for (int i = 0; i < R - 2; ++i) idx[i] = bt.idx[i];
  const int lane = threadIdx.x % warp_size;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += warp_size) {
        const index_t m = m0 + wm * 64 + i * 16 + e / 16, n = n0 + wn * 32 + j * 16 + e % 16;
        if (m < G::M && n < G::N) {
          idx[R - 2] = m;
          idx[R - 1] = n;
          dst.data()[Dst::offset_of(idx)] = convert<D>(epilogue_value(root, idx, stage[e]));
        }
      }
      __syncwarp();
    }
#endif
}

// ---- SIMT ------------------------------------------------------------------------------------------
// 128 x 128 x 8 block tiles, 256 threads with 8 x 8 outputs each, split as two 4 x 4 quadrants 64 rows
// and 64 columns apart (so that a warp's reads of a k row of the tiles are 16-byte vectors and free of
// bank conflicts); two shared-memory buffers, the next slice fetched into registers while the current
// one is multiplied: one barrier per slice.
namespace simt {
inline constexpr int BM = 128, BN = 128, BK = 8, threads = 256, TM = 8, TN = 8;
inline constexpr int a_per_thread = BM * BK / threads, b_per_thread = BK * BN / threads; // 4 and 4
} // namespace simt

// Element e of a slice as (row, column) of an R x Cc tile, walking the operand's contiguous axis
// fastest (rows when the operand is column-major in this tile), so that neighbouring threads read
// neighbouring addresses for either layout.
template <int Rows, int Cols, bool ColsContiguous>
__device__ __forceinline__ void slice_position(int e, int& r, int& c) {
  if constexpr (ColsContiguous) {
    r = e / Cols;
    c = e % Cols;
  } else {
    r = e % Rows;
    c = e / Rows;
  }
}

struct simt_body {
  static constexpr int max_threads = simt::threads;
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& root);
};
template <class Dst, class N>
__device__ void simt_body::run(const Dst& dst, const N& root) {
  using Mm = gemm_of_t<N>;
  using C = compute_t<typename Mm::value_type>;
  using G = gemm_dims<Mm>;
  using S = typename N::shape_type;
  using D = typename Dst::value_type;
  constexpr int R = S::rank;
  __shared__ C as[2][simt::BK][simt::BM]; // k-major: a thread's rows of A are one vector read
  __shared__ C bs[2][simt::BK][simt::BN];
  const Mm& mm = find_gemm(root);
  const gemm_batch<Mm, S> bt(mm, blockIdx.z);
  const auto* pa = tenfold::detail::get<0>(mm.args).data() + bt.a_base;
  const auto* pb = tenfold::detail::get<1>(mm.args).data() + bt.b_base;
  const index_t m0 = index_t(blockIdx.y) * simt::BM, n0 = index_t(blockIdx.x) * simt::BN;
  const int t = threadIdx.x, tm = t / 16, tn = t % 16;

  C ra[simt::a_per_thread], rb[simt::b_per_thread]; // the next slice, in flight
  auto fetch = [&](index_t k0) {
#pragma unroll
    for (int i = 0; i < simt::a_per_thread; ++i) {
      int r, c;
      slice_position<simt::BM, simt::BK, G::a_k == 1>(t + i * simt::threads, r, c);
      const index_t m = m0 + r, k = k0 + c;
      ra[i] = (m < G::M && k < G::K) ? static_cast<C>(pa[m * G::a_m + k * G::a_k]) : C(0);
    }
#pragma unroll
    for (int i = 0; i < simt::b_per_thread; ++i) {
      int r, c;
      slice_position<simt::BK, simt::BN, G::b_n == 1>(t + i * simt::threads, r, c);
      const index_t k = k0 + r, n = n0 + c;
      rb[i] = (k < G::K && n < G::N) ? static_cast<C>(pb[k * G::b_k + n * G::b_n]) : C(0);
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < simt::a_per_thread; ++i) {
      int r, c;
      slice_position<simt::BM, simt::BK, G::a_k == 1>(t + i * simt::threads, r, c);
      as[buf][c][r] = ra[i];
    }
#pragma unroll
    for (int i = 0; i < simt::b_per_thread; ++i) {
      int r, c;
      slice_position<simt::BK, simt::BN, G::b_n == 1>(t + i * simt::threads, r, c);
      bs[buf][r][c] = rb[i];
    }
  };

  C acc[simt::TM][simt::TN] = {};
  fetch(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (index_t k0 = 0; k0 < G::K; k0 += simt::BK) {
    const bool more = k0 + simt::BK < G::K;
    if (more) fetch(k0 + simt::BK); // global loads in flight while this slice is multiplied
#pragma unroll
    for (int k = 0; k < simt::BK; ++k) {
      C a[simt::TM], b[simt::TN];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a[i] = as[buf][k][tm * 4 + i];
        a[i + 4] = as[buf][k][64 + tm * 4 + i];
        b[i] = bs[buf][k][tn * 4 + i];
        b[i + 4] = bs[buf][k][64 + tn * 4 + i];
      }
#pragma unroll
      for (int i = 0; i < simt::TM; ++i)
#pragma unroll
        for (int j = 0; j < simt::TN; ++j) acc[i][j] += a[i] * b[j];
    }
    if (more) store(buf ^ 1); // the other buffer: last read before the previous barrier
    __syncthreads();
    buf ^= 1;
  }
  index_t idx[R];
  for (int i = 0; i < R - 2; ++i) idx[i] = bt.idx[i];
#pragma unroll
  for (int i = 0; i < simt::TM; ++i)
#pragma unroll
    for (int j = 0; j < simt::TN; ++j) {
      const index_t m = m0 + (i < 4 ? tm * 4 + i : 64 + tm * 4 + i - 4), n = n0 + (j < 4 ? tn * 4 + j : 64 + tn * 4 + j - 4);
      if (m < G::M && n < G::N) {
        idx[R - 2] = m;
        idx[R - 1] = n;
        dst.data()[Dst::offset_of(idx)] = convert<D>(epilogue_value(root, idx, acc[i][j]));
      }
    }
}

// Which kernel a GEMM root takes (host-side, tested without a device).
template <class N>
inline constexpr bool uses_tensor_cores_v =
    tensor_core_type_v<typename gemm_of_t<N>::a_type::value_type> &&
    std::is_same_v<typename gemm_of_t<N>::a_type::value_type, typename gemm_of_t<N>::b_type::value_type>;

template <class N, bool TensorCores = uses_tensor_cores_v<N>>
constexpr dim3 gemm_grid() {
  using G = gemm_dims<gemm_of_t<N>>;
  constexpr index_t bm = TensorCores ? tc::BM : simt::BM, bn = TensorCores ? tc::BN : simt::BN;
  static_assert(G::batches < 65536, "tenfold::cuda: more than 65535 GEMM batches (grid.z limit)");
  static_assert(ceil_div(G::M, bm) < 65536, "tenfold::cuda: GEMM M too large for grid.y");
  return dim3(unsigned(ceil_div(G::N, bn)), unsigned(ceil_div(G::M, bm)), unsigned(G::batches));
}

template <class Dst, class N>
void launch_tensor_core_gemm(const Dst& dst, const N& n, stream_ref s, const char* what) {
  const auto& mm = find_gemm_host(n);
  if ((vector_rows_v<typename gemm_of_t<N>::a_type> && reinterpret_cast<std::uintptr_t>(tenfold::detail::get<0>(mm.args).data()) % 16) ||
      (vector_rows_v<typename gemm_of_t<N>::b_type> && reinterpret_cast<std::uintptr_t>(tenfold::detail::get<1>(mm.args).data()) % 16))
    throw error("tenfold::cuda: a GEMM operand's device pointer is not 16-byte aligned (tensors and arena slots always are)");
  launch<tensor_core_body>(gemm_grid<N, true>(), tc::threads, s, dst, n, what);
}

template <class Dst, class N>
void run_gemm_portable(const Dst& dst, const N& n, stream_ref s) {
  if constexpr (uses_tensor_cores_v<N>) {
    launch_tensor_core_gemm(dst, n, s, "tenfold::cuda tensor-core GEMM");
  } else {
    if constexpr (tf32_candidate_v<N>) {
      if (tf32_matmul()) return launch_tensor_core_gemm(dst, n, s, "tenfold::cuda tensor-core GEMM (TF32)");
    }
    launch<simt_body>(gemm_grid<N, false>(), simt::threads, s, dst, n, "tenfold::cuda SIMT GEMM");
  }
}
} // namespace tenfold::cuda::detail
