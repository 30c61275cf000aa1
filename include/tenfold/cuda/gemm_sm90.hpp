#pragma once
// The Hopper GEMM (sm_90a): bf16 / f16 operands, f32 accumulation, the root's elementwise consumers
// applied in the store exactly as in the portable kernels of cuda/gemm.hpp, and run_gemm, which picks
// between them.
//
// One block computes a 128 x 256 tile of C with three warpgroups:
//  - a producer (one thread of warpgroup 0) streams 64-wide K slices of A (128 x 64) and B (64 x 256)
//    into a ring of 4 shared-memory stages with TMA, each stage guarded by a "full" mbarrier (the
//    copy engine completes it when the bytes have landed) and an "empty" one (the consumers release it);
//  - two consumers (warpgroups 1, 2) each multiply their 64 rows of the A slice by the whole B slice
//    with wgmma m64n256k16, accumulating 64 x 256 f32 in registers (128 per thread), then store
//    through the epilogue.
// Registers move from the producer to the consumers with setmaxnreg. Tiles are visited in groups of
// 16 tile-rows so that the blocks resident at once share A and B slices in L2.
// Operands: A K-major (row-major [M, K]); B N-major (row-major [K, N]) or K-major (a transposed
// [N, K] weight); row and batch strides multiples of 16 bytes; batches folded into a third TMA
// coordinate or broadcast. Anything else, or a device without sm_90a code, takes cuda/gemm.hpp's kernels.
#include <cudaTypedefs.h> // PFN_cuTensorMapEncodeTiled (found through the runtime: no -lcuda)

#include <cstdlib>
#include <string>

#include "tenfold/cuda/gemm.hpp"
#include "tenfold/cuda/wgmma.hpp"

namespace tenfold::cuda::detail {
namespace sm90 {
inline constexpr int BM = 128, BN = 256, BK = 64, stages = 4, threads = 384, group_rows = 16;
inline constexpr unsigned a_stage_bytes = BM * BK * 2, b_stage_bytes = BK * BN * 2, stage_bytes = a_stage_bytes + b_stage_bytes;
// The stages, 1 KiB to align them (the 128-byte swizzle repeats every 1024 bytes), the barriers.
inline constexpr unsigned smem_bytes = stages * stage_bytes + 1024 + 2 * stages * 8;

// How an operand's batches are addressed: one for all (broadcast), or a third TMA coordinate with
// a single stride (its batch axes are the output's, laid out like a flattened axis).
enum class batching { none, broadcast, strided, unsupported };

template <class Out, class L>
constexpr batching batching_of() {
  constexpr int R = Out::rank, r = L::rank;
  if constexpr (R == 2) return batching::none;
  else {
    bool all_one = true;
    for (int i = 0; i + 2 < r; ++i) all_one = all_one && L::shape_type::dims[i] == 1;
    if (all_one) return batching::broadcast;
    if constexpr (r != R) return batching::unsupported;
    else {
      for (int i = 0; i + 2 < r; ++i)
        if (L::shape_type::dims[i] != Out::dims[i]) return batching::unsupported;
      for (int i = 0; i + 3 < r; ++i)
        if (L::strides[i] != L::strides[i + 1] * L::shape_type::dims[i + 1]) return batching::unsupported;
      return L::strides[r - 3] % 8 == 0 ? batching::strided : batching::unsupported;
    }
  }
}

// Can this GEMM root take the sm90 kernel (everything known at compile time)?
template <class N>
constexpr bool eligible() {
  using Mm = gemm_of_t<N>;
  using CA = typename Mm::a_type;
  using CB = typename Mm::b_type;
  using G = gemm_dims<Mm>;
  using Out = typename Mm::shape_type;
  if constexpr (!uses_tensor_cores_v<N>) return false;
  else {
    constexpr batching ba = batching_of<Out, CA>(), bb = batching_of<Out, CB>();
    const bool a_ok = G::a_k == 1 && G::a_m % 8 == 0 && CA::offset % 8 == 0;
    const bool b_ok = ((G::b_n == 1 && G::b_k % 8 == 0) || (G::b_k == 1 && G::b_n % 8 == 0)) && CB::offset % 8 == 0;
    return a_ok && b_ok && ba != batching::unsupported && bb != batching::unsupported && G::batches < 65536 &&
           G::M * G::N > 0 && G::K > 0;
  }
}
template <class N>
inline constexpr bool eligible_v = eligible<N>();

// Whether B's tile arrives N-major (row-major [K, N]); otherwise K-major.
template <class Mm>
inline constexpr bool b_n_major_v = gemm_dims<Mm>::b_n == 1;

struct body {
  template <class Dst, class N>
  __device__ static void run(const CUtensorMap& ta, const CUtensorMap& tb, const Dst& dst, const N& root);
};

template <class Dst, class N>
__device__ void body::run(const CUtensorMap& ta, const CUtensorMap& tb, const Dst& dst, const N& root) {
#if TENFOLD_SM90A
  using Mm = gemm_of_t<N>;
  using T = typename Mm::a_type::value_type;
  using G = gemm_dims<Mm>;
  using S = typename N::shape_type;
  using D = typename Dst::value_type;
  using Out = typename Mm::shape_type;
  constexpr int R = S::rank;
  constexpr bool a_batched = batching_of<Out, typename Mm::a_type>() == batching::strided;
  constexpr bool b_batched = batching_of<Out, typename Mm::b_type>() == batching::strided;
  constexpr bool n_major = b_n_major_v<Mm>;
  constexpr int k_tiles = int(ceil_div(G::K, BK));
  constexpr index_t tiles_m = ceil_div(G::M, BM), tiles_n = ceil_div(G::N, BN);

  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
  T* as = reinterpret_cast<T*>(smem);
  T* bs = reinterpret_cast<T*>(smem + stages * a_stage_bytes);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + stages * stage_bytes);
  std::uint64_t* empty = full + stages;

  // This block's tile: groups of group_rows tile-rows, column-major inside a group.
  const index_t tile = blockIdx.x, per_group = index_t(group_rows) * tiles_n;
  const index_t first_m = tile / per_group * group_rows;
  const index_t rows_here = tiles_m - first_m < group_rows ? tiles_m - first_m : group_rows;
  const int m0 = int((first_m + tile % per_group % rows_here) * BM), n0 = int(tile % per_group / rows_here * BN);
  const int batch = int(blockIdx.y);

  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(&full[s], 1);  // the producer's expect_tx; the bytes complete it
      mbar_init(&empty[s], 8); // lane 0 of each consumer warp
    }
    fence_barrier_init();
  }
  __syncthreads();

  const int warpgroup = int(threadIdx.x / 128);
  if (warpgroup == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % stages;
        if (kt >= stages) mbar_wait(&empty[s], unsigned(kt / stages - 1) & 1u);
        mbar_expect_tx(&full[s], stage_bytes);
        T* a_dst = as + s * (BM * BK);
        T* b_dst = bs + s * (BK * BN);
        if constexpr (a_batched) tma_load(a_dst, &ta, &full[s], kt * BK, m0, batch);
        else tma_load(a_dst, &ta, &full[s], kt * BK, m0);
        if constexpr (n_major) {
          // Four 64-column chunks (128 bytes wide: the swizzle's span), each BK rows of k.
#pragma unroll
          for (int c = 0; c < BN / 64; ++c) {
            if constexpr (b_batched) tma_load(b_dst + c * (64 * BK), &tb, &full[s], n0 + 64 * c, kt * BK, batch);
            else tma_load(b_dst + c * (64 * BK), &tb, &full[s], n0 + 64 * c, kt * BK);
          }
        } else {
          if constexpr (b_batched) tma_load(b_dst, &tb, &full[s], kt * BK, n0, batch);
          else tma_load(b_dst, &tb, &full[s], kt * BK, n0);
        }
      }
    }
    return;
  }

  setmaxnreg_inc<232>();
  const int consumer = warpgroup - 1; // rows 64 * consumer .. +64 of the tile
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % stages;
    mbar_wait(&full[s], unsigned(kt / stages) & 1u);
    const T* a = as + s * (BM * BK) + consumer * (64 * BK);
    const T* b = bs + s * (BK * BN);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      // A, K-major: rows of 128 bytes (64 k), 8-row swizzle atoms 1024 bytes apart (the stride byte
      // offset); the leading offset is unused. A k step of 16 moves 32 bytes along the row.
      const std::uint64_t da = smem_desc(a + kk * 16, 16, 1024);
      if constexpr (n_major) {
        // B, N-major: each 64-column chunk holds BK rows of 128 bytes; 8 k-rows per atom (stride
        // byte offset 1024), the next 64 columns one chunk further (leading byte offset).
        const std::uint64_t db = smem_desc(b + kk * 16 * 64, 64 * BK * 2, 1024);
        if constexpr (std::is_same_v<T, bf16>) wgmma_m64n256k16_bf16<1>(acc, da, db, 1);
        else wgmma_m64n256k16_f16<1>(acc, da, db, 1);
      } else {
        // B, K-major: like A, 256 rows of n.
        const std::uint64_t db = smem_desc(b + kk * 16, 16, 1024);
        if constexpr (std::is_same_v<T, bf16>) wgmma_m64n256k16_bf16<0>(acc, da, db, 1);
        else wgmma_m64n256k16_f16<0>(acc, da, db, 1);
      }
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_accumulators(acc);
    if (threadIdx.x % warp_size == 0) mbar_arrive(&empty[s]);
  }

  // Epilogue. Accumulator layout of m64nNk16: warp w of the warpgroup holds rows 16w .. 16w+15;
  // registers 4q .. 4q+3 are columns 8q + 2 (lane % 4) + {0, 1} of rows lane / 4 and lane / 4 + 8.
  const Mm& mm = find_gemm(root);
  const gemm_batch<Mm, S> bt(mm, index_t(batch));
  index_t idx[R];
  for (int i = 0; i < R - 2; ++i) idx[i] = bt.idx[i];
  const int t = int(threadIdx.x % 128), lane = t % warp_size;
  const index_t row0 = index_t(m0) + 64 * consumer + 16 * (t / warp_size) + lane / 4;
  const index_t col0 = index_t(n0) + 2 * (lane % 4);
#pragma unroll
  for (int q = 0; q < 32; ++q)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const index_t m = row0 + 8 * h, n = col0 + 8 * q + e;
        if (m < G::M && n < G::N) {
          idx[R - 2] = m;
          idx[R - 1] = n;
          dst.data()[Dst::offset_of(idx)] = convert<D>(epilogue_value(root, idx, acc[4 * q + 2 * h + e]));
        }
      }
#endif
}

template <class Key, std::size_t Bytes, std::size_t Align>
__global__ void __launch_bounds__(threads, 1)
    kernel(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb, const kernel_bytes<Bytes, Align> packed) {
  using Args = decode_t<typename Key::type>;
  const Args& args = *reinterpret_cast<const Args*>(packed.bytes);
  body::run(ta, tb, args.dst, args.n);
}

// ---- host side -------------------------------------------------------------------------------------
// Is there sm_90a code for the current device (cached per device)? TENFOLD_CUDA_PORTABLE_GEMM=1 in
// the environment, or portable_only() = true, sends every GEMM to cuda/gemm.hpp's kernels.
inline bool& portable_only() {
  static bool v = std::getenv("TENFOLD_CUDA_PORTABLE_GEMM") != nullptr;
  return v;
}
inline bool available() {
  constexpr int max_devices = 64;
  static signed char known[max_devices] = {}; // 0 unknown, 1 yes, -1 no
  int dev = 0;
  TENFOLD_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev >= max_devices) return false;
  if (known[dev] == 0) {
    int major = 0, minor = 0;
    TENFOLD_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    TENFOLD_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    int found = 0;
    if (major == 9 && minor == 0) {
      device_buffer flag(sizeof(int));
      sm90a_probe<><<<1, 1>>>(reinterpret_cast<int*>(flag.data()));
      check_launch("tenfold::cuda sm90a probe");
      TENFOLD_CUDA_CHECK(cudaMemcpy(&found, flag.data(), sizeof(int), cudaMemcpyDeviceToHost));
    }
    known[dev] = found == 1 ? 1 : -1;
  }
  return known[dev] == 1;
}

inline PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    TENFOLD_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || p == nullptr)
      throw error("tenfold::cuda: the driver has no cuTensorMapEncodeTiled (a CUDA 12+ driver is needed for the sm90 GEMM)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// A TMA map of an operand as [batches,] rows x inner (inner contiguous), box of box_rows x 64, with
// the 128-byte swizzle; out-of-range boxes read zeros (the K, M and N tails).
template <class T>
CUtensorMap operand_map(const T* base, index_t inner, index_t rows, index_t row_stride, index_t batches, index_t batch_stride,
                        unsigned box_rows, const char* which) {
  CUtensorMap map{};
  const bool batched = batches > 0;
  const cuuint64_t dims[3] = {cuuint64_t(inner), cuuint64_t(rows), cuuint64_t(batched ? batches : 1)};
  const cuuint64_t strides[2] = {cuuint64_t(row_stride) * sizeof(T), cuuint64_t(batch_stride) * sizeof(T)};
  const cuuint32_t box[3] = {64, box_rows, 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult r = encode_tiled()(&map, std::is_same_v<T, bf16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                    batched ? 3 : 2, const_cast<T*>(base), dims, strides, box, element_strides,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw error(std::string("tenfold::cuda: cuTensorMapEncodeTiled failed (CUresult ") + std::to_string(int(r)) + ") for GEMM operand " + which);
  return map;
}

template <class Key, class Args>
void launch_sm90(Key, dim3 grid, stream_ref s, const CUtensorMap& ta, const CUtensorMap& tb, const Args& args) {
  static_assert(std::is_same_v<decode_t<typename Key::type>, Args>, "tenfold::cuda: a node type does not survive the kernel-name encoding");
  kernel_bytes<sizeof(Args), alignof(Args)> packed;
  std::memcpy(packed.bytes, static_cast<const void*>(&args), sizeof(Args));
  auto* k = &kernel<Key, sizeof(Args), alignof(Args)>;
  static const bool sized = [k] {
    TENFOLD_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_bytes)));
    return true;
  }();
  (void)sized;
  k<<<grid, threads, smem_bytes, s.handle>>>(ta, tb, packed);
  check_launch("tenfold::cuda sm90 GEMM (TMA + wgmma)");
}

template <class Dst, class N>
void run(const Dst& dst, const N& n, stream_ref s) {
  using Mm = gemm_of_t<N>;
  using CA = typename Mm::a_type;
  using CB = typename Mm::b_type;
  using T = typename CA::value_type;
  using G = gemm_dims<Mm>;
  using Out = typename Mm::shape_type;
  const Mm& mm = find_gemm_host(n);
  const T* pa = tenfold::detail::get<0>(mm.args).data() + CA::offset;
  const T* pb = tenfold::detail::get<1>(mm.args).data() + CB::offset;
  if (reinterpret_cast<std::uintptr_t>(pa) % 16 || reinterpret_cast<std::uintptr_t>(pb) % 16)
    throw error("tenfold::cuda: a GEMM operand's device pointer is not 16-byte aligned (tensors and arena slots always are)");
  constexpr bool a_batched = batching_of<Out, CA>() == batching::strided, b_batched = batching_of<Out, CB>() == batching::strided;
  constexpr index_t a_bs = a_batched ? CA::strides[CA::rank - 3] : 0, b_bs = b_batched ? CB::strides[CB::rank - 3] : 0;
  const CUtensorMap ta = operand_map(pa, G::K, G::M, G::a_m, a_batched ? G::batches : 0, a_bs, BM, "A");
  const CUtensorMap tb = b_n_major_v<Mm> ? operand_map(pb, G::N, G::K, G::b_k, b_batched ? G::batches : 0, b_bs, BK, "B")
                                         : operand_map(pb, G::K, G::N, G::b_n, b_batched ? G::batches : 0, b_bs, BN, "B");
  const dim3 grid(unsigned(ceil_div(G::M, BM) * ceil_div(G::N, BN)), unsigned(G::batches));
  using Args = kernel_args<Dst, N>;
  launch_sm90(key_of(static_cast<Args*>(nullptr)), grid, s, ta, tb, Args{dst, n});
}
} // namespace sm90

// A GEMM root: the sm90 kernel where it applies and the device has it, else the portable kernels.
template <class Dst, class N>
void run_gemm(const Dst& dst, const N& n, stream_ref s) {
  if constexpr (sm90::eligible_v<N>) {
    if (!sm90::portable_only() && sm90::available()) return sm90::run(dst, n, s);
  }
  run_gemm_portable(dst, n, s);
}
} // namespace tenfold::cuda::detail
