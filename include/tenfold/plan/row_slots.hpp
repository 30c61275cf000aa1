#pragma once
// Row slots: the reductions a row-fused kernel computes once per row (a reduction broadcast back and
// constant along the row: softmax's max and sum, layer_norm's two means), numbered in post-order so
// that a reduction nested in another's operand comes first (dependency order), and which of them share
// one result. The numbering is what a backend that keeps its row's reductions in an array indexes
// (CUDA's kernels: cuda/rows.hpp, cuda/rows_vector.hpp); it is decided here, from the types alone.
//
// Sharing (plan/same_reductions.hpp says why copies arise): slot s reads slot p's result instead of
// computing its own when both reduce with exactly the same type (op, operand tree, axes) at the same
// index for every row. The index a slot reduces at is an affine function of the row's index (views are
// affine maps, a reduction's base index a projection), so it is compared at compile time on the
// origin and on one step along each axis, which decides it for every row. The operands' runtime data
// (pointers, numbers) are compared once per launch by same_repeated_reductions; a launch that finds
// them different computes every slot.
#include <array>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenfold/plan/fusion.hpp"
#include "tenfold/plan/nest_node.hpp"

namespace tenfold::plan {

// Reduced axes of a reduction, as a bit set over its input's axes (bit i: axis i).
template <class Rd>
constexpr unsigned mask_bits() {
  unsigned m = 0;
  for (int i = 0; i < Rd::input_shape::rank; ++i)
    if (Rd::mask[i]) m |= 1u << i;
  return m;
}

// Is N a reduction seen through a broadcast that is constant along the axes in `Varying` (the axes a
// row iterates over)? Then it is computed once per row, into a slot.
template <class N, unsigned Varying>
constexpr bool is_slot() {
  if constexpr (!is_reduce_view_v<N>) return false;
  else {
    for (int j = 0; j < int(N::map_type::src.size()); ++j) {
      const int a = N::map_type::src[j];
      if (a >= 0 && N::shape_type::dims[a] != 1 && ((Varying >> a) & 1u)) return false;
    }
    return true;
  }
}

template <class N, unsigned Varying>
constexpr int slot_count() {
  [[maybe_unused]] constexpr nest_node kind = nest_kind_v<N>; // a node kind the nests do not know stops here
  if constexpr (is_slot<N, Varying>()) {
    using Rd = typename N::child_type;
    return slot_count<typename Rd::child_type, mask_bits<Rd>()>() + 1;
  } else if constexpr (detail::is_map_node_v<N>) {
    return []<class... C>(detail::tuple<C...>*) { return (0 + ... + slot_count<C, Varying>()); }(static_cast<decltype(N::args)*>(nullptr));
  } else {
    return 0; // the other kinds hold no slot: the walk takes reductions out of views and pads
  }
}

// Slot base of child I of a map node: the slots of the children before it come first.
template <class Args, unsigned Varying, std::size_t I>
constexpr int child_base() {
  return []<std::size_t... J>(std::index_sequence<J...>) {
    return (0 + ... + slot_count<detail::tuple_element_t<J, Args>, Varying>());
  }(std::make_index_sequence<I>{});
}

template <class N, unsigned Varying>
constexpr bool has_slots() {
  return slot_count<N, Varying>() > 0;
}

namespace slots {
inline constexpr int max_rank = 8;
using index = std::array<index_t, max_rank>;

// The number of the first slot of tree N (its slots numbered from Base, in post-order) whose reduction
// has type Rd; -1 where none has. Two slots of one tree reduce with the same type exactly when this is
// the same for both: the types are compared here, not addresses of per-type variables (which
// AddressSanitizer's builds do not compare at compile time).
template <class N, unsigned Varying, int Base, class Rd>
constexpr int first_of() {
  if constexpr (is_slot<N, Varying>()) {
    using R = typename N::child_type;
    constexpr int inner = first_of<typename R::child_type, mask_bits<R>(), Base, Rd>();
    if constexpr (inner >= 0) return inner;
    else if constexpr (std::is_same_v<R, Rd>) return Base + slot_count<typename R::child_type, mask_bits<R>()>();
    else return -1;
  } else if constexpr (detail::is_map_node_v<N>) {
    using Args = decltype(N::args);
    return []<std::size_t... I>(std::index_sequence<I...>) {
      int r = -1;
      ((r = r >= 0 ? r : first_of<detail::tuple_element_t<I, Args>, Varying, Base + child_base<Args, Varying, I>(), Rd>()), ...);
      return r;
    }(std::make_index_sequence<detail::tuple_size_v<Args>>{});
  } else {
    return -1;
  }
}

// What the sharing decision needs of each slot: which reduction type it is (first_of in the whole
// tree Root) and the input index it reduces at for one row index.
struct info {
  int type = -1;
  index base{};
};

template <class Root, unsigned RootVarying, class N, unsigned Varying, int Base>
constexpr void describe(const index_t* idx, info* out) {
  if constexpr (is_slot<N, Varying>()) {
    using Rd = typename N::child_type;
    using C = typename Rd::child_type;
    static_assert(Rd::rank <= max_rank && C::rank <= max_rank, "tenfold: row slots of rank above 8");
    index_t in[Rd::rank > 0 ? Rd::rank : 1]{}, base[C::rank > 0 ? C::rank : 1]{};
    N::map_type::map(idx, in);
    Rd::base_index(in, base);
    describe<Root, RootVarying, C, mask_bits<Rd>(), Base>(base, out);
    info& s = out[Base + slot_count<C, mask_bits<Rd>()>()];
    s.type = first_of<Root, RootVarying, 0, Rd>();
    for (int i = 0; i < C::rank; ++i) s.base[std::size_t(i)] = base[i];
  } else if constexpr (detail::is_map_node_v<N>) {
    using Args = decltype(N::args);
    [idx, out]<std::size_t... I>(std::index_sequence<I...>) {
      (describe<Root, RootVarying, detail::tuple_element_t<I, Args>, Varying, Base + child_base<Args, Varying, I>()>(idx, out), ...);
    }(std::make_index_sequence<detail::tuple_size_v<Args>>{});
  }
}
} // namespace slots

// For the slots of tree N in a row over the axes in Varying: share[s], the slot whose result slot s
// reads (s itself when it computes its own).
template <class N, unsigned Varying>
struct row_slot_sharing {
  static constexpr int count = slot_count<N, Varying>();
  static constexpr std::array<int, count> share = [] {
    std::array<int, count> r{};
    for (int s = 0; s < count; ++s) r[std::size_t(s)] = s;
    if constexpr (count > 1) {
      constexpr int R = N::rank;
      bool same[count][count]{};
      for (int p = 0; p < count; ++p)
        for (int s = 0; s < count; ++s) same[p][s] = true;
      // The origin, then one step along each axis that has one.
      for (int a = -1; a < R; ++a) {
        if (a >= 0 && N::shape_type::dims[a] == 1) continue;
        index_t idx[R > 0 ? R : 1]{};
        if (a >= 0) idx[a] = 1;
        slots::info at[count]{};
        slots::describe<N, Varying, N, Varying, 0>(idx, at);
        for (int p = 0; p < count; ++p)
          for (int s = 0; s < count; ++s) same[p][s] = same[p][s] && at[p].type == at[s].type && at[p].base == at[s].base;
      }
      for (int s = 0; s < count; ++s)
        for (int p = 0; p < s; ++p)
          if (same[p][s]) {
            r[std::size_t(s)] = p;
            break;
          }
    }
    return r;
  }();
  static constexpr bool any = [] {
    for (int s = 0; s < count; ++s)
      if (share[std::size_t(s)] != s) return true;
    return false;
  }();
};
} // namespace tenfold::plan
