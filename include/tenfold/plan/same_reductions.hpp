#pragma once
// Which reductions of one loop nest compute the same values, decided once for every backend.
//
// The composites read a reduction more than once: layer_norm's x - mean(x) appears in its numerator and
// inside its variance, softmax's exp(x - max(x)) in its numerator and inside its sum, log_softmax's two
// halves run one accumulation. Each copy is its own subtree of the same type, and a row must compute
// it once. Two things make copies the same:
//  - the types: a reduction's type (op, operand tree, axes) is the whole computation but for runtime
//    data. Decided here at compile time: the candidates (reductions of one type, or of one accumulation)
//    and, for the backends that number their reductions (CUDA's slots), which occurrence reads which.
//  - the runtime data a type does not carry: a leaf's pointer, a scalar's value, a pad's fill
//    (`sum(a) + sum(b)` with a and b of one type). Compared once per launch, not per row:
//    `same_repeated_reductions(n)` checks that the candidates of each kind hold equal data (same_data:
//    nodes are plain aggregates of pointers and numbers, compared member by member where they hold
//    children, byte by byte where they do not).
// A nest without candidates pays nothing; a nest whose candidates differ computes each occurrence.
#include <array>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "tenfold/core/children.hpp"
#include "tenfold/plan/nest_node.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::plan {

// A reduction's kind for sharing: its node type, except that an op declaring `using accumulation =
// Other;` (log_softmax's max and log-sum halves) counts as that accumulation (the reader applies its
// own finalize).
template <class Rd>
struct shared_accumulation {
  using type = Rd;
};
template <class Op, class C, auto Mask, bool Keep>
  requires requires { typename Op::accumulation; }
struct shared_accumulation<detail::reduce_node<Op, C, Mask, Keep>> {
  using type = detail::reduce_node<typename Op::accumulation, C, Mask, Keep>;
  static_assert(sizeof(type) == sizeof(detail::reduce_node<Op, C, Mask, Keep>));
};
template <class Rd>
using shared_accumulation_t = typename shared_accumulation<Rd>::type;

namespace same {
// The kinds of node a nest evaluates its children through (the others hold no reduction of the nest:
// a finished GEMM block, a node computed by index from prepared operands).
template <class N>
constexpr bool walks_children() {
  using enum nest_node;
  constexpr nest_node k = nest_kind_v<N>;
  return k == map || k == reduce_view || k == reduction || k == view || k == pad || k == concat || k == take;
}

template <class... T>
struct list {
  static constexpr int size = sizeof...(T);
};
template <class A, class B>
struct join;
template <class... A, class... B>
struct join<list<A...>, list<B...>> {
  using type = list<A..., B...>;
};

// The reduction nodes of N's tree in post-order (children first).
template <class N>
struct reductions;
template <class N, class Children>
struct reductions_of_children;
template <class N>
struct reductions_of_children<N, detail::tuple<>> {
  using type = list<>;
};
template <class N, class C0, class... C>
struct reductions_of_children<N, detail::tuple<C0, C...>> {
  using type = typename join<typename reductions<C0>::type, typename reductions_of_children<N, detail::tuple<C...>>::type>::type;
};
template <class N>
struct reductions {
  using below = std::conditional_t<walks_children<N>(), typename reductions_of_children<N, detail::children_t<N>>::type, list<>>;
  using type = std::conditional_t<detail::is_reduce_node_v<N>, typename join<below, list<N>>::type, below>;
};

template <bool Exact, class T, class... R>
constexpr int first_of() {
  constexpr bool eq[] = {(Exact ? std::is_same_v<T, R> : std::is_same_v<shared_accumulation_t<T>, shared_accumulation_t<R>>)..., false};
  for (int j = 0; j < int(sizeof...(R)); ++j)
    if (eq[j]) return j;
  return -1;
}
template <class L>
struct kinds;
template <class... R>
struct kinds<list<R...>> {
  // first[i]: the first reduction of the i-th's kind (i itself when it is the first).
  static constexpr std::array<int, sizeof...(R)> first = {first_of<false, R, R...>()...};
  // first_exact[i]: the first of exactly the i-th's type (finalize included).
  static constexpr std::array<int, sizeof...(R)> first_exact = {first_of<true, R, R...>()...};
  static constexpr bool repeated = [] {
    for (int i = 0; i < int(sizeof...(R)); ++i)
      if (first[std::size_t(i)] != i) return true;
    return false;
  }();
};

// Do a and b hold the same runtime data? Map, reduction and view nodes hold nothing but their children,
// which are compared one by one (so the padding between children, whose bytes are unspecified, does not
// count); any other node (a leaf: a pointer; a scalar: its value; a pad, a generator ...) is compared
// byte by byte (padding there only costs the sharing).
template <class N>
bool same_data(const N& a, const N& b) {
  if constexpr (detail::is_map_node_v<N> || detail::is_reduce_node_v<N> || detail::is_view_of_v<N>) {
    return detail::unpack(
        [&b](const auto&... x) {
          return detail::unpack([&x...](const auto&... y) { return (same_data(x, y) && ...); }, detail::children(b));
        },
        detail::children(a));
  } else if constexpr (requires { typename N::holder_type; }) {
    // a leaf whose storage is named by its type (a step's slot) holds no data: its byte is unspecified
    if constexpr (std::is_empty_v<typename N::holder_type>) return true;
    else return std::memcmp(&a, &b, sizeof(N)) == 0;
  } else {
    return std::memcmp(&a, &b, sizeof(N)) == 0;
  }
}
// Do the reductions at[...] (of the types R..., in order) of each kind reduce equal operands?
template <class... R, std::size_t... I>
bool same_operands(const void* const* at, std::index_sequence<I...>) {
  using K = kinds<list<R...>>;
  using all = std::tuple<R...>;
  const auto one = [at]<std::size_t J>() {
    constexpr auto f = std::size_t(K::first[J]);
    if constexpr (f == J) return true;
    else {
      using A = std::tuple_element_t<J, all>;
      using B = std::tuple_element_t<f, all>;
      static_assert(std::is_same_v<decltype(A::arg), decltype(B::arg)>, "tenfold: reductions of one kind reduce one operand type");
      return same_data(static_cast<const A*>(at[J])->arg, static_cast<const B*>(at[f])->arg);
    }
  };
  return (one.template operator()<I>() && ...);
}
template <class... R>
bool same_operands(const void* const* at, list<R...>) {
  return same_operands<R...>(at, std::index_sequence_for<R...>{});
}

// Pointers to the reduction nodes of n, in the order of reductions<N>.
template <class N>
void collect(const N& n, const void** out, int& k) {
  if constexpr (walks_children<N>())
    detail::unpack([&](const auto&... c) { (collect(c, out, k), ...); }, detail::children(n));
  if constexpr (detail::is_reduce_node_v<N>) out[k++] = static_cast<const void*>(&n);
}
} // namespace same

// The reductions of a nest's tree N, in post-order, and which of them are of one kind.
template <class N>
using nest_reductions = same::kinds<typename same::reductions<N>::type>;

// Does N hold two reductions of one kind (so that a row may compute one for both)?
template <class N>
inline constexpr bool repeated_reductions_v = nest_reductions<N>::repeated;

// Once per launch: do the reductions of each kind in n hold the same operands? Then a row computes each
// kind once; otherwise (two kinds alike only in type) every occurrence is computed.
template <class N>
bool same_repeated_reductions(const N& n) {
  using K = nest_reductions<N>;
  if constexpr (!K::repeated) return true;
  else {
    const void* at[K::first.size()];
    int k = 0;
    same::collect(n, at, k);
    return same::same_operands(at, typename same::reductions<N>::type{});
  }
}
} // namespace tenfold::plan
