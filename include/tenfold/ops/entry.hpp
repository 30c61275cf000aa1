#pragma once
// What an op entry is, for the library's own table and for an op defined outside it (README, "Defining
// your own op"). An entry is a struct deriving from a base of ops/descriptor.hpp — tenfold::ops::unary,
// binary, ternary or reduction, the public spelling — with the entry itself as the first argument:
//
//                  elementwise (unary, binary, ternary)        reduction
//   required       name, scalar                                name, identity, combine, merge, finalize
//   optional       simd                                        simd_combine with simd_merge
//   the table's    reference, test, bench (ops/table.hpp)      reference, test, bench
//
// The concepts below say it once. tenfold::apply and tenfold::reduce (ops/api.hpp), through which every
// elementwise and reduction function of the library goes too, check an entry against them with the
// check_* functions at the end, whose static_asserts say which part is missing or wrong; the compiler's
// note just above the message names the entry and the operand types.
//
// A `simd` (or simd_combine / simd_merge) is used for every operating type whose xsimd::batch it accepts;
// an entry constrains it to the batch types it supports (erf: float only) and the others run `scalar`.
// One that accepts neither a batch of the operating type nor one of float was written for something
// else (scalars, say) and is an error. A body that fails to compile for a batch it accepts is reported
// at that body: C++ cannot test a function body without compiling it.
#include <concepts>
#include <string_view>

#include "tenfold/core/xsimd.hpp"
#include "tenfold/ops/descriptor.hpp"

namespace tenfold::ops {

namespace entry_detail {
template <class D, kind K, category C>
D elementwise_base(const elementwise<D, K, C>*);
template <class D, reduce_result RR>
D reduction_base(const reduction<D, RR>*);

// Whether Op declares a member of a name, whatever it is (a function template, an overload set): a
// class deriving from Op and from a decoy that declares the name finds it twice, ambiguously, when Op
// declares it too. (A final Op cannot be derived from; it counts as declaring nothing optional.)
struct scalar_decoy {
  static void scalar();
};
struct simd_decoy {
  static void simd();
};
struct simd_combine_decoy {
  static void simd_combine();
};
struct simd_merge_decoy {
  static void simd_merge();
};
template <class Op, class Decoy>
struct probe : Op, Decoy {};

template <class T, class>
using repeat_t = T;

template <class L>
inline constexpr bool lane_type_v = std::is_same_v<L, float> || std::is_same_v<L, double> ||
                                    std::is_same_v<L, std::int32_t> || std::is_same_v<L, std::int64_t>;
} // namespace entry_detail

template <class Op>
concept named_entry = requires {
  { Op::name } -> std::convertible_to<std::string_view>;
};
template <class Op>
concept declares_scalar = !std::is_final_v<Op> && !requires { &entry_detail::probe<Op, entry_detail::scalar_decoy>::scalar; };
template <class Op>
concept declares_simd = !std::is_final_v<Op> && !requires { &entry_detail::probe<Op, entry_detail::simd_decoy>::simd; };
template <class Op>
concept declares_simd_combine =
    !std::is_final_v<Op> && !requires { &entry_detail::probe<Op, entry_detail::simd_combine_decoy>::simd_combine; };
template <class Op>
concept declares_simd_merge =
    !std::is_final_v<Op> && !requires { &entry_detail::probe<Op, entry_detail::simd_merge_decoy>::simd_merge; };

// ---- elementwise -----------------------------------------------------------------------------------
// Derives from unary<D, C>, binary<D, C> or ternary<D, C>, where D is the entry or one of its bases.
template <class Op>
concept elementwise_base = requires(const Op* p) { entry_detail::elementwise_base(p); } &&
                           std::is_base_of_v<decltype(entry_detail::elementwise_base(static_cast<const Op*>(nullptr))), Op>;
template <class Op>
concept elementwise_entry = elementwise_base<Op> && named_entry<Op>;

// `scalar` computes one element from operands converted to the entry's operating type O (for operands
// whose compute types are V...). An entry that computes an element from the operands as they come
// defines apply<R>(a...) instead and says so with `own_apply` (where: its condition is not converted).
template <class Op, class... V>
concept scalar_callable = requires(entry_detail::repeat_t<typename Op::template scalar_operand<V...>, V>... o) {
  Op::scalar(o...);
};
template <class Op>
concept own_apply = requires {
  requires Op::own_apply;
};
namespace entry_detail {
template <class Op, class L, class Seq>
inline constexpr bool simd_takes = false;
template <class Op, class L, std::size_t... K>
inline constexpr bool simd_takes<Op, L, std::index_sequence<K...>> =
    requires(repeat_t<xsimd::batch<L>, std::integral_constant<std::size_t, K>>... b) { Op::simd(b...); };
} // namespace entry_detail
template <class Op, class L>
concept simd_callable_with =
    entry_detail::lane_type_v<L> && entry_detail::simd_takes<Op, L, std::make_index_sequence<std::size_t(Op::arity)>>;
// No simd, or one that takes batches of the operating type O or of float.
template <class Op, class O>
concept simd_usable = !declares_simd<Op> || simd_callable_with<Op, O> || simd_callable_with<Op, float>;

// Op applies to operands whose compute types are V... (one per operand).
template <class Op, class... V>
concept elementwise_entry_for = elementwise_entry<Op> && sizeof...(V) == Op::arity &&
                                (own_apply<Op> || scalar_callable<Op, V...>) &&
                                simd_usable<Op, typename Op::template scalar_operand<V...>>;

// ---- reductions --------------------------------------------------------------------------------------
template <class Op>
concept reduction_base = requires(const Op* p) { entry_detail::reduction_base(p); } &&
                         std::is_base_of_v<decltype(entry_detail::reduction_base(static_cast<const Op*>(nullptr))), Op>;
template <class Op>
concept reduction_entry = reduction_base<Op> && named_entry<Op>;

// For elements of type V: the accumulator A (acc_t), each element converted to I (input_type).
template <class Op, class V>
concept has_identity = requires {
  { Op::template identity<acc_t<Op, V>>() } -> std::convertible_to<acc_t<Op, V>>;
};
template <class Op, class V>
concept has_combine = requires(acc_t<Op, V> a, typename Op::template input_type<V> x, index_t i) {
  { Op::combine(a, x, i) } -> std::convertible_to<acc_t<Op, V>>;
};
template <class Op, class V>
concept has_merge = requires(acc_t<Op, V> a) {
  { Op::merge(a, a) } -> std::convertible_to<acc_t<Op, V>>;
};
template <class Op, class V>
concept has_finalize = requires(acc_t<Op, V> a, index_t n) { Op::finalize(a, n); };
template <class Op, class L>
concept simd_reduce_callable_with = entry_detail::lane_type_v<L> && requires(xsimd::batch<L> b) {
  Op::simd_combine(b, b);
  Op::simd_merge(b, b);
};
// Both or neither of simd_combine and simd_merge; taking batches of the input type I or of float.
template <class Op, class I>
concept simd_reduce_usable =
    (declares_simd_combine<Op> == declares_simd_merge<Op>) &&
    (!declares_simd_combine<Op> || simd_reduce_callable_with<Op, I> || simd_reduce_callable_with<Op, float>);

template <class Op, class V>
concept reduction_entry_for = reduction_entry<Op> && has_identity<Op, V> && has_combine<Op, V> && has_merge<Op, V> &&
                              has_finalize<Op, V> && simd_reduce_usable<Op, typename Op::template input_type<V>>;
} // namespace tenfold::ops

namespace tenfold::detail {

template <class>
inline constexpr bool entry_false = false;

// The entry alone (its base and name). Each check returns whether it passed; after a failed one the
// caller stops, so that one mistake gives one message.
template <class Op>
constexpr bool check_elementwise_entry() {
  if constexpr (!ops::elementwise_base<Op>) {
    static_assert(entry_false<Op>, "tenfold::apply: an elementwise op entry must derive from tenfold::ops::unary<Entry, "
                                   "category>, binary<Entry, category> or ternary<Entry, category> (a reduction's "
                                   "entry goes to tenfold::reduce)");
    return false;
  } else if constexpr (!ops::named_entry<Op>) {
    static_assert(entry_false<Op>, "tenfold: an op entry needs a name: static constexpr std::string_view name = \"...\";");
    return false;
  } else {
    return true;
  }
}

// The entry for operands whose compute types are V..., which its scalar function takes as O.
template <class Op, class O, class... V>
constexpr bool check_elementwise_operands() {
  if constexpr (!ops::own_apply<Op> && !ops::scalar_callable<Op, V...>) {
    if constexpr (!ops::declares_scalar<Op>)
      static_assert(entry_false<Op>, "tenfold: an elementwise op entry needs a scalar function, one parameter per "
                                     "operand: template <class T> TENFOLD_HD static T scalar(T x)");
    else
      static_assert(entry_false<O>, "tenfold: the op entry's scalar function cannot be called with its operands "
                                    "converted to its operating type (O in the note)");
    return false;
  } else if constexpr (!ops::simd_usable<Op, O>) {
    static_assert(entry_false<O>, "tenfold: the op entry's simd function takes no xsimd::batch operands, neither of its "
                                  "operating type (O in the note) nor of float: write it for batches, template <class B> "
                                  "static B simd(const B& x), constrained to the batches it supports, or leave it out");
    return false;
  } else {
    return true;
  }
}

template <class Op>
constexpr bool check_reduction_entry() {
  if constexpr (!ops::reduction_base<Op>) {
    static_assert(entry_false<Op>, "tenfold::reduce: a reduction entry must derive from tenfold::ops::reduction<Entry, "
                                   "reduce_result> (an elementwise op's entry goes to tenfold::apply)");
    return false;
  } else if constexpr (!ops::named_entry<Op>) {
    static_assert(entry_false<Op>, "tenfold: an op entry needs a name: static constexpr std::string_view name = \"...\";");
    return false;
  } else {
    return true;
  }
}

// The reduction for elements of type V (A: its accumulator, I: an element as combine takes it).
template <class Op, class V, class A = ops::acc_t<Op, V>, class I = typename Op::template input_type<V>>
constexpr bool check_reduction_elements() {
  if constexpr (!ops::has_identity<Op, V>) {
    static_assert(entry_false<A>, "tenfold: a reduction entry needs identity, the accumulator's start (A in the note): "
                                  "template <class A> TENFOLD_HD static constexpr A identity()");
    return false;
  } else if constexpr (!ops::has_combine<Op, V>) {
    static_assert(entry_false<A>, "tenfold: a reduction entry needs combine, one element (I in the note) at position i "
                                  "into the accumulator (A): template <class A, class X> TENFOLD_HD static A "
                                  "combine(A acc, X x, index_t i)");
    return false;
  } else if constexpr (!ops::has_merge<Op, V>) {
    static_assert(entry_false<A>, "tenfold: a reduction entry needs merge, two partial accumulators (A in the note) "
                                  "into one: template <class A> TENFOLD_HD static A merge(A a, A b)");
    return false;
  } else if constexpr (!ops::has_finalize<Op, V>) {
    static_assert(entry_false<A>, "tenfold: a reduction entry needs finalize, the result from the accumulator (A in the "
                                  "note) and the element count: template <class A> TENFOLD_HD static A finalize(A a, "
                                  "index_t n)");
    return false;
  } else if constexpr (ops::declares_simd_combine<Op> != ops::declares_simd_merge<Op>) {
    static_assert(entry_false<Op>, "tenfold: a reduction entry has both simd_combine and simd_merge, or neither");
    return false;
  } else if constexpr (!ops::simd_reduce_usable<Op, I>) {
    static_assert(entry_false<I>, "tenfold: the reduction entry's simd_combine / simd_merge take no xsimd::batch "
                                  "operands, neither of its input type (I in the note) nor of float: write them for "
                                  "batches, template <class B> static B simd_combine(const B& acc, const B& x), or "
                                  "leave both out");
    return false;
  } else {
    return true;
  }
}
} // namespace tenfold::detail
