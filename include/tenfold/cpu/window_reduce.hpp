#pragma once
// Window reductions at the root: a reduction over a few trailing axes that keeps the others — pooling's
// max/mean over [.., OH, OW, KH, KW] windows — written one output row at a time from a window row
// (cpu/window_rows.hpp: the outputs along the last kept axis are the SIMD lanes, each reduced position
// one strided or padded operand row). Rows are split over the thread pool. The general kernel
// (cpu/reduce.hpp) would reduce one output at a time: a few scalar steps per output for a 3x3 window.
#include "tenfold/cpu/reduce.hpp"

namespace tenfold::cpu {

// Output elements below which a window reduction stays on the calling thread.
inline constexpr index_t window_parallel_grain = 1 << 12;

// Does N read a window reduction through elementwise nodes only (or is one)?
template <class N>
constexpr bool contains_window_row() {
  constexpr plan::nest_node kind = plan::nest_kind_v<N>;
  if constexpr (kind == plan::nest_node::reduction) return window_row_ok<N, typename N::input_t>();
  else if constexpr (kind == plan::nest_node::map)
    return []<class... C>(detail::tuple<C...>*) { return (contains_window_row<C>() || ...); }(static_cast<decltype(N::args)*>(nullptr));
  else return false; // no other kind holds a window reduction in the same nest
}
// Runs here: a window reduction, or an elementwise tree over one (relu(max_pool2d(x))), vectorised in
// its own value type along a last axis at least one vector long.
template <class N>
constexpr bool window_rooted() {
  if constexpr (N::rank == 0 || !contains_window_row<N>()) return false;
  else {
    using L = compute_t<typename N::value_type>;
    if constexpr (!lane_type_v<L>) return false;
    else return simd_ok<N, L>::value && N::shape_type::dims[N::rank - 1] >= lanes<L>;
  }
}

// Row by row along the last axis; each row's last vector overlaps the one before (instead of a scalar
// tail, which for a window row would be `count` scalar steps per element).
template <class Dst, class N>
void run_window_rows(const Dst& dst, const N& n) {
  using L = compute_t<typename N::value_type>;
  using D = typename Dst::value_type;
  using S = typename N::shape_type;
  constexpr int R = N::rank;
  constexpr index_t ext = S::dims[R - 1], rows = S::size / ext, w = lanes<L>;
  constexpr index_t dst_step = Dst::strides[R - 1];
  using index_array = std::array<index_t, R + 1>; // (declared here: GCC 12 crashes on it inside the lambdas)
  auto row_range = [&](index_t r0, index_t r1) {
    for (index_t r = r0; r < r1; ++r) {
      index_array idx{};
      detail::unravel<shape_from<prefix_dims<S, R - 1>()>>(r, idx.data());
      const auto row = make_row<R - 1, L>(n, idx.data());
      D* d = dst.data() + Dst::offset_of(idx.data());
      auto vector_at = [&](index_t j) {
        if constexpr (std::is_same_v<D, L> && dst_step == 1) row.load(j).store_unaligned(d + j);
        else {
          alignas(default_alignment) L lane[w];
          row.load(j).store_aligned(lane);
          for (index_t k = 0; k < w; ++k) d[(j + k) * dst_step] = convert<D>(lane[k]);
        }
      };
      index_t j = 0;
      for (; j + w <= ext; j += w) vector_at(j);
      if (j < ext) vector_at(ext - w); // the same values written twice where the two overlap
    }
  };
  parallel_for(rows, std::max<index_t>(1, window_parallel_grain / ext), 1, row_range);
}
} // namespace tenfold::cpu
