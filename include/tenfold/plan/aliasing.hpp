#pragma once
// Aliasing, decided once for every backend: does a prepared tree (plan/walk.hpp's result, every let
// resolved and every buffer filled) read the destination's memory anywhere but at the element being
// written? An elementwise read of the destination at its own index map is safe (x = x * 2); any other
// read — through another index map (x = transpose(x)), or by a node that reads many elements for one
// (a reduction, a GEMM, attention, a pad or concat) — is not, and the backend then evaluates aside.
// The test is on addresses, at run time: a pointer compare per leaf, and for leaves over other
// memory a compare of the byte ranges they reach (owned tensors never overlap; maps of the caller's
// memory, core/tensor_map.hpp, may).
#include <cstdint>
#include <tuple>
#include <utility>

#include "tenfold/core/children.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::plan {

// The bytes [first, last) a strided leaf can reach.
template <class L>
std::pair<std::uintptr_t, std::uintptr_t> reach(const L& l) {
  index_t lo = L::offset, hi = L::offset;
  for (int i = 0; i < L::rank; ++i) (L::strides[i] < 0 ? lo : hi) += L::strides[i] * (L::shape_type::dims[i] - 1);
  const auto base = reinterpret_cast<std::uintptr_t>(l.data());
  const auto size = std::uintptr_t(sizeof(typename L::value_type));
  return {base + std::uintptr_t(lo) * size, L::shape_type::size == 0 ? base : base + std::uintptr_t(hi + 1) * size};
}

template <class Dst, class N>
bool aliases(const Dst& dst, const N& n, bool opaque = false) {
  if constexpr (detail::is_leaf_v<N>) {
    if (static_cast<const void*>(n.data()) != static_cast<const void*>(dst.data())) {
      const auto a = reach(n), b = reach(dst);
      return a.first < b.second && b.first < a.second;
    }
    if constexpr (N::rank == Dst::rank) {
      if (!opaque && N::strides == Dst::strides && N::offset == Dst::offset) return false;
    }
    return true;
  } else {
    // An elementwise node reads its operands at the element it writes; every other kind may read more.
    const bool through = opaque || !detail::is_map_node_v<N>;
    return detail::unpack([&](const auto&... c) { return (false || ... || aliases(dst, c, through)); }, detail::children(n));
  }
}
} // namespace tenfold::plan
