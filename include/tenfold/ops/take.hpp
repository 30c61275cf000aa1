#pragma once
// take, embedding, take_along_axis / gather: reads at indices held in an int32 or int64 tensor
// (core/gather_node.hpp). Fused with their consumers; every index is checked before the nest runs.
#include "tenfold/core/gather_node.hpp"
#include "tenfold/core/scatter_node.hpp"
#include "tenfold/core/views.hpp"

namespace tenfold {

namespace detail {
// take (Along = false) or take_along_axis (true): the checks, then the node.
template <int Axis, bool Along, class X, class I>
auto make_take(X&& x, I&& idx) {
  static_assert(index_leaf<I>(), "tenfold::take/take_along_axis: the indices must be a tensor or a view of one "
                                 "(evaluate computed indices into a tensor first: each is checked before the nest runs)");
  using Check = check_take<shape_of_t<X>, shape_of_t<I>, typename node_t<I>::value_type, Axis, Along>;
  if constexpr (!Check::valid || !index_leaf<I>()) return invalid_view{};
  else
    return take_node<Check::axis, Along, node_t<X>, node_t<I>>{{}, {as_node(std::forward<X>(x)), as_node(std::forward<I>(idx))}};
}
} // namespace detail

// take<axis>(x, idx), as NumPy's np.take(x, idx, axis): the result's shape is x's with axis `axis`
// replaced by idx's whole shape; out[..., j..., ...] = x[..., idx[j...], ...].
template <int Axis, expression X, expression I>
auto take(X&& x, I&& idx) {
  return detail::make_take<Axis, false>(std::forward<X>(x), std::forward<I>(idx));
}

// embedding(table, ids): rows of table [V, D] for token ids of any shape -> [ids..., D] (torch's
// F.embedding). An id outside [0, V) is a tenfold::error.
template <expression W, expression I>
auto embedding(W&& table, I&& ids) {
  static_assert(detail::shape_of_t<W>::rank == 2, "tenfold::embedding: the table must be [vocabulary, width]");
  return take<0>(std::forward<W>(table), std::forward<I>(ids));
}

// take_along_axis<axis>(x, idx), as NumPy's (and torch.gather(x, axis, idx)): idx has x's rank and
// at most x's extent on the other axes; out[i...] = x[i... with axis `axis` replaced by idx[i...]].
template <int Axis, expression X, expression I>
auto take_along_axis(X&& x, I&& idx) {
  return detail::make_take<Axis, true>(std::forward<X>(x), std::forward<I>(idx));
}

// gather<axis>(x, idx): PyTorch's name for take_along_axis.
template <int Axis, expression X, expression I>
auto gather(X&& x, I&& idx) {
  return take_along_axis<Axis>(std::forward<X>(x), std::forward<I>(idx));
}

} // namespace tenfold
