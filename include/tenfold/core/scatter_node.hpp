#pragma once
// The adjoint of take (core/gather_node.hpp): a source-shaped result, zero but where the take read, and
// there the sum of g (the gradient of the take's result) over every position that read the element, so
// repeated indices accumulate. It is the gradient of an embedding table.
//
// A scatter cannot be computed one output element at a time without a pass over every index, so it is
// a node with a kernel of its own that reads its operands from memory (core/leaf_operand_node.hpp): the
// walk materialises g first, and the node itself unless it is the root; the CPU runs it as one pass over
// g (cpu/scatter.hpp). `at` is that pass for one element, O(indices): the fallback, and the definition.
// The indices are checked before anything runs, as take's are.
#include <string>
#include <tuple>

#include "tenfold/core/gather_node.hpp"
#include "tenfold/core/leaf_operand_node.hpp"

namespace tenfold::detail {

// Along and Axis as in take_node, whose source had shape S; G: g, shaped as the take's result.
template <int Axis, bool Along, class S, class G, class Idx>
struct scatter_add_node : node_tag {
  using value_type = typename G::value_type;
  using shape_type = S;
  using g_shape = typename G::shape_type;
  using index_shape = typename Idx::shape_type;
  static constexpr int rank = S::rank;
  static constexpr int axis = Axis;
  static constexpr bool along = Along;
  static constexpr bool leaf_operands = true; // core/leaf_operand_node.hpp
  detail::tuple<G, Idx> args;
  template <class G2, class I2>
  constexpr auto with_children(detail::tuple<G2, I2>&& c) const {
    return scatter_add_node<Axis, Along, S, G2, I2>{{}, std::move(c)};
  }

  // The output element that element gi of g adds to: where the take read it.
  TENFOLD_HD void target(const index_t* gi, index_t* out) const {
    if constexpr (Along) {
      for (int a = 0; a < rank; ++a) out[a] = gi[a];
      out[Axis] = static_cast<index_t>(detail::get<1>(args).at(gi));
    } else {
      constexpr int r = index_shape::rank;
      for (int a = 0; a < Axis; ++a) out[a] = gi[a];
      out[Axis] = static_cast<index_t>(detail::get<1>(args).at(gi + Axis));
      for (int a = Axis + 1; a < rank; ++a) out[a] = gi[a + r - 1];
    }
  }

  TENFOLD_HD compute_t<value_type> at(const index_t* idx) const {
    compute_t<value_type> acc{};
    index_t gi[g_shape::rank > 0 ? g_shape::rank : 1];
    index_t j[index_shape::rank > 0 ? index_shape::rank : 1];
    const auto& g = detail::get<0>(args);
    const auto& ids = detail::get<1>(args);
    if constexpr (Along) {
      // Only the positions that agree with idx off the axis read the column idx lies in.
      for (int a = 0; a < rank; ++a) {
        if (a != Axis && idx[a] >= extent<g_shape>(a)) return acc;
        gi[a] = idx[a];
      }
      for (index_t k = 0; k < extent<g_shape>(Axis); ++k) {
        gi[Axis] = k;
        if (static_cast<index_t>(ids.at(gi)) == idx[Axis]) acc += static_cast<compute_t<value_type>>(g.at(gi));
      }
    } else {
      constexpr int r = index_shape::rank;
      for (int a = 0; a < Axis; ++a) gi[a] = idx[a];
      for (int a = Axis + 1; a < rank; ++a) gi[a + r - 1] = idx[a];
      for (index_t k = 0; k < index_shape::size; ++k) {
        unravel<index_shape>(k, j);
        if (static_cast<index_t>(ids.at(j)) != idx[Axis]) continue;
        for (int a = 0; a < r; ++a) gi[Axis + a] = j[a];
        acc += static_cast<compute_t<value_type>>(g.at(gi));
      }
    }
    return acc;
  }

  // Every index in [0, extent) (a write out of range would corrupt memory): before anything runs.
  void check_indices() const {
    check_index_values<S::dims[Axis]>(detail::get<1>(args), Along ? "take_along_axis (gradient)" : "take (gradient)", Axis,
                                      &G::str);
  }
  static std::string str() {
    return std::string(Along ? "scatter_add_along<" : "scatter_add<") + std::to_string(Axis) + ">(" + G::str() + ", " +
           Idx::str() + ")";
  }
};

template <class E>
inline constexpr bool is_scatter_add_node_v = false;
template <int A, bool L, class S, class G, class I>
inline constexpr bool is_scatter_add_node_v<scatter_add_node<A, L, S, G, I>> = true;

// The adjoint of take node T: g (an expression of T's shape) scattered back onto T's source.
template <class T, class G>
auto take_adjoint(const T& t, G&& g) {
  using Idx = std::remove_cvref_t<decltype(detail::get<1>(t.args))>;
  using N = node_t<G>;
  return scatter_add_node<T::axis, T::along, typename T::source_shape, N, Idx>{
      {}, {as_node(std::forward<G>(g)), detail::get<1>(t.args)}};
}
} // namespace tenfold::detail
