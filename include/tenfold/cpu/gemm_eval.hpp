#pragma once
// Assignments whose root is a matmul, or elementwise over exactly one matmul of the same shape: the
// GEMM runs per batch element and block, and the root expression — with the matmul replaced by the
// finished block — is evaluated for that block's rows in the store. together(...) of several such
// roots over one product (cpu/together.hpp) runs the GEMM once and stores every root from each block.
#include "tenfold/cpu/gemm.hpp"
#include "tenfold/cpu/gemm_small.hpp"
#include "tenfold/cpu/prepacked.hpp"
#include "tenfold/cpu/reduce.hpp"
#include "tenfold/cpu/rows.hpp"
#include "tenfold/plan/fusion.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::cpu {

template <class Dst, class N>
void run_elementwise(const Dst& dst, const N& n);

// The finished block of C standing in for the matmul in the epilogue: element (i, j) of the output
// is block[(i - i0) * ldc + (j - j0)] for the block's rows and columns.
template <class T, class S>
struct gemm_block : node_base {
  static constexpr bool nest_block = true; // plan/nest_node.hpp
  using value_type = T;
  using shape_type = S;
  static constexpr int rank = S::rank;
  const T* p;
  index_t ldc, i0, j0;
  T at(const index_t* idx) const { return p[(idx[rank - 2] - i0) * ldc + (idx[rank - 1] - j0)]; }
  template <class L>
  gemm_block_row<T, L> row(const index_t* idx) const {
    return {p + (idx[rank - 2] - i0) * ldc, j0};
  }
  static std::string str() { return "gemm_block"; }
};
template <class T, class L>
struct gemm_block_row {
  const T* p; // the row's first element, at column j0
  index_t j0;
  TENFOLD_INLINE T scalar(index_t j) const { return p[j - j0]; }
  TENFOLD_INLINE batch<L> load(index_t j) const { return batch<L>::load_unaligned(p + (j - j0)); }
};

// The block holding one vector of a row of C, the one run_gemm's joint store loaded at the column it
// computes: each epilogue's tail over it reads that value (load) and the block for a run's scalar end.
// Every epilogue then computes from one value, and what their trees share (gelu's exp and its slope's)
// the compiler computes once (from two loads of the same address, through two tails, it did not).
template <class T, class L>
struct gemm_value_row {
  const T* p; // the row's first element, at column j0
  index_t j0;
  batch<L> x;
  TENFOLD_INLINE T scalar(index_t j) const { return p[j - j0]; }
  TENFOLD_INLINE batch<L> load(index_t) const { return x; }
};
template <class T, class S, class L>
struct gemm_block_value : gemm_block<T, S> {
  batch<L> x;
  template <class L2>
  gemm_value_row<T, L> row(const index_t* idx) const {
    static_assert(std::is_same_v<L2, L>);
    return {this->p + (idx[S::rank - 2] - this->i0) * this->ldc, this->j0, x};
  }
};
template <class T, class S, class L>
inline constexpr bool is_gemm_block_v<gemm_block_value<T, S, L>> = true;

template <class N, class Block>
auto substitute_block(const N& n, const Block& blk) {
  if constexpr (plan::is_gemm_driven_v<N>) return blk;
  else if constexpr (detail::is_map_node_v<N>)
    return detail::unpack(
        [&](const auto&... c) {
          return detail::map_node<typename N::op_type, decltype(substitute_block(c, blk))...>{{}, {substitute_block(c, blk)...}};
        },
        n.args);
  else return n;
}

template <class N>
const auto& find_matmul(const N& n) {
  if constexpr (plan::is_gemm_driven_v<N>) return n;
  else {
    constexpr std::size_t which = []<class... C>(detail::tuple<C...>*) {
      std::size_t i = 0, found = 0;
      ((found = plan::epilogue_matmuls<C>() ? i : found, ++i), ...);
      return found;
    }(static_cast<decltype(N::args)*>(nullptr));
    return find_matmul(detail::get<which>(n.args));
  }
}

template <class Leaf, class H>
consteval bool packed_view() {
  using S = typename Leaf::shape_type;
  return []<class T, index_t K, index_t N>(packed_holder<T, K, N>*) {
    return Leaf::rank == 2 && Leaf::offset == 0 && S::dims[0] == K && S::dims[1] == N && Leaf::strides[0] == 1 &&
           (Leaf::strides[1] == K || N == 1);
  }(static_cast<H*>(nullptr));
}

// Leaf -> the matrix of one batch element (batch axes broadcast from the right).
template <class Leaf, int OutRank>
matrix_ref<std::remove_const_t<typename Leaf::element_type>> batch_matrix(const Leaf& l, const index_t* out_idx) {
  constexpr int r = Leaf::rank;
  index_t off = Leaf::offset;
  for (int i = 0; i + 2 < r; ++i)
    if (Leaf::shape_type::dims[i] != 1) off += out_idx[OutRank - r + i] * Leaf::strides[i];
  using H = typename Leaf::holder_type;
  if constexpr (is_packed_holder_v<H>) {
    // A Prepacked weight w [N, K] seen as wᵀ (K x N, strides (1, K), no offset): its panels are that
    // matrix packed. Any other view of it (w itself, a slice) is packed as usual.
    if constexpr (packed_view<Leaf, H>()) return {l.data(), 1, Leaf::shape_type::dims[0], l.holder.panels, Leaf::shape_type::dims[0]};
  }
  return {l.data() + off, Leaf::strides[r - 2], Leaf::strides[r - 1]};
}

// Whether the destination can be C itself: the bare product, stored as T with contiguous rows.
template <class Dst, class N, class Mm, class T>
inline constexpr bool gemm_direct_v = std::is_same_v<N, Mm> && std::is_same_v<std::remove_const_t<typename Dst::element_type>, T> &&
                                      Dst::strides[Dst::rank - 1] == 1;

// The small static path (cpu/gemm_small.hpp) for operands of T with contiguous rows of B.
template <class Mm, class T>
constexpr bool use_small_gemm() {
  using LA = typename Mm::a_type;
  using LB = typename Mm::b_type;
  if constexpr (!std::is_same_v<std::remove_const_t<typename LA::element_type>, T> ||
                !std::is_same_v<std::remove_const_t<typename LB::element_type>, T>)
    return false;
  else return small_gemm_v<T, Mm::M, Mm::N, Mm::K, LB::strides[LB::rank - 1]>;
}

// Can the batch axes fold into M, making one GEMM of (batches * M) rows? When B is the same matrix for
// every batch element (a weight: [..., M, K] x [K, N]) and A's batch axes and rows lie at one stride,
// as those of a contiguous activation do: then B is packed once, not once per batch element, and the
// threads split all the rows. (A transformer's linear layers on [batch, tokens, width] are this case:
// packing B per batch element of 128 rows took a fifth of all-MiniLM-L6-v2's time.)
template <class Mm, class S>
constexpr bool batch_folds() {
  using LA = typename Mm::a_type;
  using LB = typename Mm::b_type;
  constexpr int R = S::rank;
  if constexpr (R < 3 || !detail::is_leaf_v<LA> || !detail::is_leaf_v<LB> || LA::rank != R) return false;
  else {
    for (int i = 0; i + 2 < LB::rank; ++i)
      if (LB::shape_type::dims[i] != 1) return false;
    for (int i = 0; i + 2 < R; ++i)
      if (LA::shape_type::dims[i] != S::dims[i] || LA::strides[i] != LA::strides[i + 1] * LA::shape_type::dims[i + 1]) return false;
    return LA::strides[R - 2] != 0;
  }
}
// The same for the destination written directly: its batch axes and rows at one stride.
template <class Dst>
constexpr bool rows_fold() {
  for (int i = 0; i + 2 < Dst::rank; ++i)
    if (Dst::strides[i] != Dst::strides[i + 1] * Dst::shape_type::dims[i + 1]) return false;
  return true;
}

// Whether the stores of several epilogues of one block can run as one loop of whole vectors of lane type
// L: each value vectorised in L, each destination contiguous rows of L.
template <class L, class Block, class... P>
constexpr bool joint_store_v = lane_type_v<L> && ((std::is_same_v<typename lane_of<decltype(substitute_block(std::declval<typename P::value_type_>(), std::declval<Block>()))>::type, L> &&
                                                  simd_ok<decltype(substitute_block(std::declval<typename P::value_type_>(), std::declval<Block>())), L>::value &&
                                                  std::is_same_v<std::remove_const_t<typename P::dst_type_::element_type>, L> &&
                                                  run_stride<typename P::dst_type_, P::dst_type_::rank - 1>() == 1) && ...);

// An epilogue beside run_gemm's first, as together(...) hands it over: a destination and a value over the
// same product.
template <class D, class V>
struct gemm_output {
  using dst_type_ = D;
  using value_type_ = V;
  const D& dst;
  const V& value;
};

// A row of a finished block (blk) stored through a product's first epilogue (root; d its destination's
// row, s its value's) and the others (more...) as one loop of whole vectors: each vector of C loaded once,
// every value computed from it (gemm_block_value), then all stored; the run's scalar end through each
// value over the block.
template <int R, class L, class T, class S, class Blk, class Root, class D, class Row, class... More>
TENFOLD_INLINE void store_joint_row(const Root& root, const Blk& blk, const index_t* i, const D& d, const Row& s, index_t j0, index_t nc,
                                    const More&... more) {
  constexpr index_t w = lanes<L>;
  const index_t body = j0 + nc / w * w;
  const auto outs = std::make_tuple(make_row<R - 1, L>(more.dst, i)...);
  for (index_t j = j0; j < body; j += w) {
    const gemm_block_value<T, S, L> bv{blk, batch<L>::load_unaligned(blk.p + (j - j0))};
    const auto v0 = make_row<R - 1, L>(substitute_block(root, bv), i).load(j);
    const auto vs = std::make_tuple(make_row<R - 1, L>(substitute_block(more.value, bv), i).load(j)...);
    v0.store_unaligned(d.p + j);
    [&]<std::size_t... I>(std::index_sequence<I...>) { (std::get<I>(vs).store_unaligned(std::get<I>(outs).p + j), ...); }(std::index_sequence_for<More...>{});
  }
  if (body == j0 + nc) return;
  for (index_t j = body; j < j0 + nc; ++j) d.p[j] = s.scalar(j);
  auto scalar_end = [&](const auto& o, const auto& out) {
    const auto t = substitute_block(o.value, blk);
    const auto r = make_row<R - 1, L>(t, i);
    for (index_t j = body; j < j0 + nc; ++j) out.p[j] = r.scalar(j);
  };
  [&]<std::size_t... I>(std::index_sequence<I...>) { (scalar_end(more, std::get<I>(outs)), ...); }(std::index_sequence_for<More...>{});
}

// The other epilogues' rows of a finished block, each stored after the one before (a destination that is
// not rows of L, or a value not in L's vectors).
template <int R, class Blk, class... More>
void store_more_rows(const Blk& blk, const index_t* i, index_t j0, index_t nc, const More&... more) {
  auto one = [&](const auto& o) {
    using D = std::remove_cvref_t<decltype(o.dst)>;
    using V = std::remove_cvref_t<decltype(o.value)>;
    const auto t = substitute_block(o.value, blk);
    using L = typename lane_of<decltype(t)>::type;
    if constexpr (lane_type_v<L> && simd_ok<decltype(t), L>::value)
      store_run<typename D::element_type, L, run_stride<D, R - 1>(), typename V::value_type>(make_row<R - 1, L>(o.dst, i), make_row<R - 1, L>(t, i), j0, j0 + nc);
    else store_run_scalar(make_row<R - 1, float>(o.dst, i), make_row<R - 1, float>(t, i), j0, j0 + nc);
  };
  (one(more), ...);
}

template <class Dst, class N, class... More>
void run_gemm(const Dst& dst, const N& root, const More&... more) {
  constexpr bool multi = sizeof...(More) > 0; // more epilogues of the same product (together(...))
  using S = typename N::shape_type;
  using Mm = std::remove_cvref_t<decltype(find_matmul(root))>;
  using T = compute_t<typename Mm::value_type>;
  constexpr int R = S::rank;
  if constexpr (!(std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    run_elementwise(dst, root); // integer matmuls: one dot product per element through `at`
  } else {
    const Mm& mm = find_matmul(root);
    constexpr index_t N_ = Mm::N, K = Mm::K, rows = Mm::M; // rows: of one batch element
    constexpr bool fold = batch_folds<Mm, S>();
    constexpr index_t M = fold ? rows * detail::product(S::dims, 0, R - 2) : rows;
    constexpr index_t batches = fold ? 1 : detail::product(S::dims, 0, R - 2);
    using index_array = std::array<index_t, R + 1>;
    using Block = gemm_block<T, S>;
    using Tail = decltype(substitute_block(root, std::declval<Block>()));
    using L0 = typename lane_of<Tail>::type;
    constexpr bool vec = lane_type_v<L0> && simd_ok<Tail, L0>::value;
    using L = std::conditional_t<vec, L0, float>;
    // The blocking and split: tuned for this machine and shape class where the table has them.
    constexpr gemm_config cfg = gemm_config_for<T>(M, N_, K);
    // A few rows through a weight matrix of 64 KiB or more (a decode step's tokens) stay on their
    // threads (schedule_gemm), instead of one core streaming all of the weights from memory.
    // Rows of a bounded length (a [upto<M>, K] operand): M is the capacity for every static choice, and
    // the product runs over the first dst.length() rows.
    constexpr bool bounded = S::has_bounded;
    static_assert(!bounded || (R == 2 && !fold));
    static_assert(!bounded || !multi, "tenfold::together: the epilogues of a product of bounded rows are not supported");
    index_t m = M;
    if constexpr (bounded) {
      m = dst.length();
      if (m == 0) return;
      // the scratch of the capacity's product, so that a longer length later allocates nothing
      gemm_workspace<T>::local().reserve(M, N_, std::max({cfg.kc, cfg.kc_in_place, cfg.kc_crowded}),
                                         gemm_tile<T>::MR * std::max<index_t>(1, cfg.mc_panels));
    }
    constexpr bool small = !fold && !bounded && use_small_gemm<Mm, T>();
    constexpr bool resident = !small && batches == 1 && M <= gemm_in_place_rows<T> &&
                              double(K) * double(N_) * double(sizeof(T)) >= 65536.0;
    // A single product too small to cut over threads is cut along k instead (gemm_k_sliced).
    constexpr index_t slices = !small && !bounded && batches == 1 ? gemm_k_slices<T>(M, N_, K) : 1;
    gemm_schedule sched = slices > 1 ? gemm_schedule{} : schedule_gemm(m, N_, K, batches, resident, cfg);
    // The unrolled small kernels take whole products, or, for those schedule_gemm gives the pool
    // (>= 4 MFLOP) with threads to spare, halves of their rows (the halves' shapes are static too, so
    // only these products instantiate them).
    constexpr bool small_halves = small && M >= 8 && 2.0 * double(M) * double(N_) * double(K) >= 4e6;
    if (small) sched.parts = small_halves && batches < sched.threads ? 2 : 1;
    const index_t parts = sched.parts;
    constexpr bool direct = !multi && gemm_direct_v<Dst, N, Mm, T> && (!fold || rows_fold<Dst>());
    constexpr bool joint = multi && vec && joint_store_v<L, Block, gemm_output<Dst, N>, More...>;
    auto task = [&](index_t t0, index_t t1) {
      index_array idx{};
      for (index_t t = t0; t < t1; ++t) {
        const index_t b = t / parts;
        detail::unravel<shape_from<prefix_dims<S, R - 2>()>>(b, idx.data());
        const auto a = batch_matrix<typename Mm::a_type, R>(detail::get<0>(mm.args), idx.data());
        const auto bm = batch_matrix<typename Mm::b_type, R>(detail::get<1>(mm.args), idx.data());
        const gemm_part range = gemm_split<T>(m, N_, t % parts, parts, matmul_split_axis<T>(m, N_, bm.panels != nullptr, cfg.split));
        index_t off = Dst::offset;
        for (int i = 0; i + 2 < R; ++i) off += idx[i] * Dst::strides[i];
        // Stores a finished block of C through the consumer expression (the epilogue).
        // (Folded: rows i0 .. i0 + mc of all batch elements' rows, each at its own batch index.)
        auto store = [&](const T* c, index_t ldc, index_t i0, index_t mc, index_t j0, index_t nc) {
          index_array i = idx;
          for (index_t r = i0; r < i0 + mc; ++r) {
            if constexpr (fold) detail::unravel<shape_from<prefix_dims<S, R - 1>()>>(r, i.data());
            else i[R - 2] = r;
            const Block blk{{}, c + (r - i0) * ldc, ldc, i[R - 2], j0};
            const auto tail = substitute_block(root, blk);
            const auto d = make_row<R - 1, L>(dst, i.data());
            const auto s = make_row<R - 1, L>(tail, i.data());
            if constexpr (joint) store_joint_row<R, L, T, S>(root, blk, i.data(), d, s, j0, nc, more...);
            else {
              if constexpr (vec) store_run<typename Dst::element_type, L, run_stride<Dst, R - 1>(), typename N::value_type>(d, s, j0, j0 + nc);
              else store_run_scalar(d, s, j0, j0 + nc);
              if constexpr (multi) store_more_rows<R>(blk, i.data(), j0, nc, more...);
            }
          }
        };
        if constexpr (small) {
          using LA = typename Mm::a_type;
          using LB = typename Mm::b_type;
          constexpr index_t ars = LA::strides[LA::rank - 2], acs = LA::strides[LA::rank - 1], brs = LB::strides[LB::rank - 2];
          const T* ap = reinterpret_cast<const T*>(a.p);
          const T* bp = reinterpret_cast<const T*>(bm.p);
          // Rows [I0, I0 + Rows) of the product.
          auto rows = [&]<index_t I0, index_t Rows>() {
            if constexpr (!multi && gemm_direct_v<Dst, N, Mm, T>) {
              constexpr index_t ldd = Dst::strides[R - 2];
              small_gemm<T, Rows, N_, K, ars, acs, brs>(ap + I0 * ars, bp, dst.data() + off + I0 * ldd, ldd);
            } else {
              // C on the stack when small, else in the thread's GEMM scratch.
              constexpr bool on_stack = Rows * N_ * index_t(sizeof(T)) <= 16384;
              alignas(default_alignment) T stack_c[on_stack ? Rows * N_ : 1];
              T* c = on_stack ? stack_c : gemm_workspace<T>::local().c.get(Rows * N_);
              small_gemm<T, Rows, N_, K, ars, acs, brs>(ap + I0 * ars, bp, c, N_);
              store(c, N_, I0, Rows, 0, N_);
            }
          };
          if constexpr (small_halves) {
            constexpr index_t half = M / 2;
            if (parts == 1) rows.template operator()<0, M>();
            else if (t % 2 == 0) rows.template operator()<0, half>();
            else rows.template operator()<half, M - half>();
          } else {
            rows.template operator()<0, M>();
          }
        } else {
          auto run = [&](const auto& out) {
            if constexpr (slices > 1) gemm_k_sliced<T>(a, bm, M, N_, K, slices, out, cfg);
            else gemm_range<T>(a, bm, m, K, range, out, cfg);
          };
          if constexpr (direct) run(gemm_direct_out<T>{dst.data() + off, Dst::strides[R - 2]});
          else run(gemm_epilogue_out<decltype(store)>{store});
        }
      }
    };
    run_gemm_tasks(sched, batches, task);
  }
}
} // namespace tenfold::cpu
