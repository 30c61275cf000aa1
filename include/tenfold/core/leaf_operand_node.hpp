#pragma once
// A trait shared by the heavy nodes that run a kernel of their own and read every operand straight
// from memory (attention; a convolution fits the same mould). Such a node
//  - declares `static constexpr bool leaf_operands = true;` and holds its operands in `detail::tuple args`;
//  - rebuilds itself over prepared operands with `with_children(detail::tuple<C...>)`, keeping its
//    non-operand data (a scale, a flag).
// The planner then treats it alike everywhere: an operand that is not a strided leaf is materialised
// first, and the node itself materialises unless it is the root of an assignment.
#include <type_traits>

namespace tenfold::detail {
template <class N>
inline constexpr bool is_leaf_operand_node_v = requires { requires std::remove_cvref_t<N>::leaf_operands; };
} // namespace tenfold::detail
