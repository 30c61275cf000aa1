#pragma once
// The adjoint of take on the CPU (core/scatter_node.hpp): the destination zeroed, then one pass over g,
// each row of g added into the row of the destination its index names. One thread, in g's order, so
// repeated indices accumulate in the same order on every run (the result does not depend on threading).
#include <algorithm>

#include "tenfold/core/scatter_node.hpp"

namespace tenfold::cpu {

template <class Dst, class N>
void run_scatter_add(const Dst& dst, const N& n) {
  using S = typename N::shape_type;
  using GS = typename N::g_shape;
  using D = typename Dst::value_type;
  using A = compute_t<D>;
  index_t o[S::rank > 0 ? S::rank : 1] = {};
  if constexpr (Dst::contiguous) std::fill_n(dst.data(), S::size, D{});
  else
    for (index_t k = 0; k < S::size; ++k) {
      detail::unravel<S>(k, o);
      dst.data()[Dst::offset_of(o)] = D{};
    }
  if constexpr (GS::size > 0) {
    const auto& g = detail::get<0>(n.args);
    using GL = std::remove_cvref_t<decltype(g)>;
    index_t gi[GS::rank > 0 ? GS::rank : 1] = {};
    // Along g's last axis the destination's last axis runs too, unless that is the indexed one (or,
    // for take_along_axis, every index may differ).
    constexpr bool rows = !N::along && GS::rank > 0 && N::axis != S::rank - 1;
    constexpr index_t len = rows ? GS::dims[GS::rank > 0 ? GS::rank - 1 : 0] : 1;
    constexpr index_t ds = rows ? Dst::strides[S::rank - 1] : 0, gs = rows ? GL::strides[GS::rank - 1] : 0;
    for (index_t k = 0; k < GS::size / len; ++k) {
      detail::unravel<GS>(k * len, gi);
      n.target(gi, o);
      D* d = dst.data() + Dst::offset_of(o);
      const auto* p = g.data() + GL::offset_of(gi);
      for (index_t j = 0; j < len; ++j)
        d[j * ds] = convert<D>(static_cast<A>(d[j * ds]) +
                               static_cast<A>(static_cast<compute_t<typename GL::value_type>>(p[j * gs])));
    }
  }
}
} // namespace tenfold::cpu
