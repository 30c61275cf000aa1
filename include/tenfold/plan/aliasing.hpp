#pragma once
// Aliasing, decided once for every backend: does a prepared tree (plan/walk.hpp's result, every let
// resolved and every buffer filled) read the destination's memory anywhere but at the element being
// written? An elementwise read of the destination at its own index map is safe (x = x * 2); any other
// read — through another index map (x = transpose(x)), or by a node that reads many elements for one
// (a reduction, a GEMM, attention, a pad or concat) — is not, and the backend then evaluates aside.
// The test is on addresses, at run time: it costs one pointer compare per leaf.
#include <tuple>

#include "tenfold/core/children.hpp"

namespace tenfold::plan {

template <class Dst, class N>
constexpr bool aliases(const Dst& dst, const N& n, bool opaque = false) {
  if constexpr (detail::is_leaf_v<N>) {
    if (static_cast<const void*>(n.data()) != static_cast<const void*>(dst.data())) return false;
    if constexpr (N::rank == Dst::rank) {
      if (!opaque && N::strides == Dst::strides && N::offset == Dst::offset) return false;
    }
    return true;
  } else {
    // An elementwise node reads its operands at the element it writes; every other kind may read more.
    const bool through = opaque || !detail::is_map_node_v<N>;
    return std::apply([&](const auto&... c) { return (false || ... || aliases(dst, c, through)); }, detail::children(n));
  }
}
} // namespace tenfold::plan
