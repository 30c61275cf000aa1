#pragma once
// The CUDA evaluator: cuda::eval(dst, expr[, arena][, stream]) and cuda::Tensor assignment. The plan is
// plan/'s, as on the CPU: materialised values first (one kernel each, into the program's arena, in the
// planner's order), then one kernel for the root, chosen at compile time from its type:
//   - an elementwise root over one matmul      -> the GEMM, the root applied in its store (cuda/gemm.hpp)
//   - an elementwise root over one convolution -> a thread per output (direct convolution, the root applied)
//   - either, with few outputs over long sums  -> a block per run of outputs, their sums split (cuda/dot.hpp)
//   - a reduction whose innermost axis reduces -> a group (warp or block) per output (cuda/rows.hpp)
//   - an elementwise root with row-fused parts -> a group per row, reductions into slots (cuda/rows.hpp)
//   - attention and its backward pass          -> a block per tile of rows, the other side through shared memory
//                                                 (cuda/attention.hpp, cuda/attention_tiled.hpp,
//                                                 cuda/attention_backward.hpp)
//   - a scan                                   -> a thread per scanned line
//   - take's adjoint (scatter-add)             -> a thread per output, over every index
//   - reductions with no row to share          -> a thread per element, its reductions once each
//   - anything else                            -> the elementwise kernels (cuda/elementwise.hpp)
// All launches are asynchronous on the given stream; nothing synchronises but to_host/copy_to.
#include "tenfold/core/scatter_node.hpp"
#include "tenfold/cuda/attention_backward.hpp"
#include "tenfold/cuda/attention_tiled.hpp"
#include "tenfold/cuda/dot.hpp"
#include "tenfold/cuda/gemm_sm90.hpp"
#include "tenfold/cuda/materialize.hpp"
#include "tenfold/plan/aliasing.hpp"
#include "tenfold/plan/bounded.hpp"
#include "tenfold/cuda/rows.hpp"

namespace tenfold::cuda {
namespace detail {

// Every leaf of a tree handed to a kernel must refer to device memory.
template <class N>
struct is_host_leaf : std::bool_constant<tenfold::detail::is_leaf_v<N> && !is_device_leaf_v<N>> {};
template <class N>
constexpr bool device_tree() {
  return !tenfold::detail::any_node<is_host_leaf, N>();
}

// One thread per scanned line, walking it in order (a scan's combine is sequential by definition).
struct scan_body {
  static constexpr int max_threads = elementwise_block;
  template <class Dst, class N>
  __device__ static void run(const Dst& dst, const N& n);
};
template <class Dst, class N>
__device__ void scan_body::run(const Dst& dst, const N& n) {
  using S = typename N::shape_type;
  using C = typename N::child_type;
  using D = typename Dst::value_type;
  using I = typename N::input_t;
  constexpr int axis = N::axis;
  constexpr index_t len = S::dims[axis], lines = S::size / (len ? len : 1);
  for (index_t line = index_t(blockIdx.x) * blockDim.x + threadIdx.x; line < lines; line += index_t(gridDim.x) * blockDim.x) {
    // The line's index with the scanned axis removed, then walked along it.
    index_t idx[S::rank];
    index_t rest = line;
    for (int i = S::rank - 1; i >= 0; --i) {
      if (i == axis) continue;
      idx[i] = rest % tenfold::detail::extent<S>(i);
      rest /= tenfold::detail::extent<S>(i);
    }
    I acc = N::op_type::template identity<I>();
    for (index_t k = 0; k < len; ++k) {
      idx[axis] = k;
      acc = N::op_type::combine(acc, static_cast<I>(n.arg.at(idx)), k);
      dst.data()[Dst::offset_of(idx)] = convert<D>(static_cast<compute_t<typename N::value_type>>(acc));
    }
  }
}

// A reduction over leading axes into few outputs, each over a long range (batch norm's per-channel
// sums: 16 outputs of 50176 elements; a bias gradient under cross-entropy: 10 outputs of 64 rows, each
// element recomputing its row's softmax): a group per output, as for an innermost reduction. Its loads
// are strided, but the whole device is at work; a thread per output would leave it idle (16 threads
// each walking 50176 elements). With many outputs, a thread per output: its loads coalesce across
// neighbouring outputs.
template <class N>
inline constexpr bool few_long_outputs_v = N::shape_type::size < 1024 && N::count >= 32;
// An innermost reduction over very short rows (a 2 x 2 pool's windows, laid innermost by a view): a
// thread per output, neighbouring threads reading neighbouring channels; a warp per row would leave 28
// of its 32 lanes idle.
inline constexpr index_t short_row_limit = 16;

template <class Dst, class N>
void run(const Dst& dst, const N& n, stream_ref s) {
  static_assert(device_tree<N>(), "tenfold::cuda: an operand refers to host memory; copy it to the device first "
                                  "(cuda::to_device) and use the device tensor's expr()");
  using S = typename N::shape_type;
  if constexpr (S::size == 0) return;
  // take's adjoint (an embedding's gradient): a thread per output element, summing g over the
  // positions whose index names it (the node's at(): every index read, in the CPU pass's order, no
  // atomics; an index out of range names no element)
  else if constexpr (tenfold::detail::is_scatter_add_node_v<N>) {
    constexpr launch_shape l = elementwise_launch(S::size, 1);
    launch<indexed_body>(l.grid, l.block, s, dst, n, "tenfold::cuda scatter-add kernel");
  }
  else if constexpr (tenfold::detail::is_attention_node_v<N>) run_attention(dst, n, s);
  else if constexpr (tenfold::detail::is_attention_grad_node_v<N>) run_attention_grad(dst, n, s);
  else if constexpr (plan::gemm_root_v<N>) {
    // A convolution (and its epilogue) runs directly: a thread per output element, whose value the
    // root's at() computes, the convolution's sum over its window included (not yet the implicit GEMM);
    // few outputs over long sums (a weight gradient, a small dense layer) take a group per output.
    if constexpr (dot_launch<N>().threads > 0) {
      if constexpr (tenfold::detail::is_matmul_node_v<gemm_of_t<N>>) {
        if constexpr (tf32_candidate_v<N>) {
          if (tf32_matmul()) return run_gemm(dst, n, s); // (the user asked for tensor cores: TF32)
        }
      }
      run_dot(dst, n, s);
    } else if constexpr (tenfold::detail::is_conv_node_v<gemm_of_t<N>>) run_elementwise(dst, n, s);
    else run_gemm(dst, n, s);
  }
  else if constexpr (tenfold::detail::is_reduce_node_v<N>) {
    if constexpr (plan::direct_fused_v<N> && N::count > short_row_limit) run_rows(dst, n, s); // innermost axis reduced: loads coalesce per group
    else if constexpr (few_long_outputs_v<N>) run_rows(dst, n, s); // outer axes, few outputs: a group each
    else run_pointwise(dst, n, s); // outer axes reduced: a thread per output, neighbours read neighbours
  } else if constexpr (tenfold::detail::is_scan_node_v<N>) {
    constexpr launch_shape l = elementwise_launch(S::size / S::dims[N::axis], 1);
    launch<scan_body>(l.grid, l.block, s, dst, n, "tenfold::cuda scan kernel");
  } else if constexpr (needs_rows<N>()) run_rows(dst, n, s);
  else if constexpr (holds_reduction<N>()) run_pointwise(dst, n, s);
  else run_elementwise(dst, n, s);
}

template <class X>
auto device_destination(X&& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (requires { x.out(); }) {
    static_assert(std::is_lvalue_reference_v<X>, "tenfold::cuda::eval: the destination must be an lvalue tensor");
    return x.out();
  } else {
    static_assert(is_device_leaf_v<D> && !std::is_const_v<typename D::element_type>,
                  "tenfold::cuda::eval: the destination must be a cuda::Tensor or a writable device view of one");
    return D(x);
  }
}

template <class Dst>
using device_destination_t = std::remove_const_t<decltype(device_destination(std::declval<Dst>()))>;
template <class Dst, class Src>
using root_node_t = decltype(tenfold::detail::expand_to<typename std::remove_const_t<decltype(device_destination(std::declval<Dst>()))>::shape_type>(
    tenfold::detail::as_node(std::declval<Src>())));

template <class Dst, class Src>
void eval_in(Dst&& dst, Src&& src, std::byte* arena, stream_ref s) {
  const auto out = device_destination(std::forward<Dst>(dst));
  using O = std::remove_const_t<decltype(out)>;
  using S = typename O::shape_type;
  auto node = tenfold::detail::expand_to<S>(tenfold::detail::as_node(std::forward<Src>(src)));
  // Every device assignment comes here (cuda::eval, cuda::Tensor's operator=): no implicit narrowing.
  static_assert(tenfold::detail::check_assignment<typename O::value_type, typename decltype(node)::value_type>::ok);
  static_assert(!S::has_bounded && !tenfold::detail::any_node<tenfold::detail::touches_bounded, decltype(node)>(),
                "tenfold::cuda: upto<N> extents are not supported by the CUDA evaluator yet");
  using P = arena_plan<decltype(node), O>;
  arena_slots slots{{}, arena, P::offsets.data(), P::buffers, s};
  auto a = plan::peel_reshape(out, std::move(node)); // as the arena planner does (plan/walk.hpp)
  const auto prepared = plan::prepare_root(std::move(a.root), slots);
  if (plan::aliases(a.dst, prepared)) {
    // Rare: the destination is read through another index map (x = transpose(x)). Evaluate aside.
    Tensor<typename O::value_type, typename decltype(a.dst)::shape_type> tmp;
    run(tmp.out(), prepared, s);
    run(a.dst, tmp.expr(), s);
    return;
  }
  run(a.dst, prepared, s);
}
} // namespace detail

// One device allocation holding every materialised buffer of a program (plan/arena.hpp lays it out at
// compile time). Make it once, with arena_for<Expr>() or a byte count, and pass it to every eval.
class arena {
 public:
  arena() = default;
  explicit arena(std::size_t bytes) : buffer_(bytes) {}
  std::byte* data() const noexcept { return buffer_.data(); }
  std::size_t size() const noexcept { return buffer_.size(); }

 private:
  device_buffer buffer_;
};

// The arena an assignment of `Src` to `Dst` needs (Dst: the destination tensor type).
template <class Dst, class Src>
inline constexpr index_t arena_bytes_for = arena_plan<detail::root_node_t<Dst&, Src>, detail::device_destination_t<Dst&>>::bytes;

// Evaluates src into dst (a cuda::Tensor or a writable device view), materialised buffers in `a`.
template <class Dst, class Src>
void eval(Dst&& dst, Src&& src, const arena& a, stream_ref s = {}) {
  using P = arena_plan<detail::root_node_t<Dst, Src>, detail::device_destination_t<Dst>>;
  if (index_t(a.size()) < P::bytes)
    throw error("tenfold::cuda::eval: the arena has " + std::to_string(a.size()) + " bytes; this expression needs " +
                std::to_string(P::bytes));
  detail::eval_in(std::forward<Dst>(dst), std::forward<Src>(src), a.data(), s);
}

// Evaluates src into dst. An expression that materialises buffers gets one stream-ordered allocation
// for all of them (from the driver's pool: no device-wide synchronisation), released after its kernels.
template <class Dst, class Src>
void eval(Dst&& dst, Src&& src, stream_ref s) {
  using P = arena_plan<detail::root_node_t<Dst, Src>, detail::device_destination_t<Dst>>;
  if constexpr (P::bytes == 0) {
    detail::eval_in(std::forward<Dst>(dst), std::forward<Src>(src), nullptr, s);
  } else {
    void* p = nullptr;
    TENFOLD_CUDA_CHECK(cudaMallocAsync(&p, std::size_t(P::bytes), s.handle));
    try {
      detail::eval_in(std::forward<Dst>(dst), std::forward<Src>(src), static_cast<std::byte*>(p), s);
    } catch (...) {
      (void)cudaFreeAsync(p, s.handle);
      throw;
    }
    TENFOLD_CUDA_CHECK(cudaFreeAsync(p, s.handle));
  }
}
} // namespace tenfold::cuda
