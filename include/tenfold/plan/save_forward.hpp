#pragma once
// save_forward(s): the values that several statements of a step read, computed once.
//
// value_and_grad's gradients are expressions over the forward tree: each one that needs a layer's
// output recomputes it. Inside one expression a let shares a value; across the statements of a step
// (the loss and one gradient per parameter) nothing did, so a two-layer perceptron's step ran each
// forward GEMM five times or more. save_forward rewrites the statements, from their types alone:
//   - saved: a GEMM-driven node (a matmul or a convolution, plan/fusion.hpp) or attention's gradient
//     node read in two places or more (forward products, backward ones that two gradients share, and
//     the rows dq | dk | dv of one attention gradient node that q's, k's and v's statements each read),
//     and an elementwise operand that two products read (each would compute it into a buffer of its
//     own). It is assigned to a slot (core/step.hpp) just before the first statement that reads it, and
//     every copy reads the slot instead; the planner gives the slot its place, alive until the last
//     reader, like any slot.
//   - recomputed: everything else, elementwise chains and reductions included (they stay fused in the
//     nests that read them, where they cost a few operations per element and no memory).
//
//   auto [loss, dw1, db1] = value_and_grad(f, w1, b1);
//   auto s = save_forward(statements(assign(l, loss), assign(gw1, dw1), assign(gb1, db1)));
//   run_step(s, arena);                         // step_plan<decltype(s)>::bytes, a constexpr
//
// A saved value is known by its type, so every copy of a saved type must hold the same data: checked
// when save_forward runs, a tenfold::error names the statement that differs (two layers of one shape
// over two inputs of one shape, as in a siamese network, are one type and two values: such a step runs
// without save_forward). No statement from a value's first reader to its last may write memory the
// value reads (also checked: an optimizer update belongs after the gradients, statements(
// save_forward(grads), updates)). A value over a slot is saved only where no statement between its
// readers writes that slot (decided from the types); values over a let's placeholder, and the layers
// of a chain, are not saved, except that a let whose value is saved is dropped (its placeholders read
// the slot) and a second round saves what its body computed from them. Key names the slots
// (saved_value<i, Key>): two save_forward groups in one step need two keys. s is a flat list of assign
// and host statements.
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenfold/core/attention_grad_node.hpp"
#include "tenfold/core/error.hpp"
#include "tenfold/core/step.hpp"
#include "tenfold/plan/aliasing.hpp"
#include "tenfold/plan/fusion.hpp"
#include "tenfold/plan/same_reductions.hpp"
#include "tenfold/plan/walk.hpp"

namespace tenfold {
namespace detail {
// The tag of the slot that holds the i-th value save_forward<Key> saves.
template <int I, class Key>
struct saved_value {};
} // namespace detail

namespace plan::saved {
using same::list;

template <class... L>
struct concat {
  using type = list<>;
};
template <class... A>
struct concat<list<A...>> {
  using type = list<A...>;
};
template <class... A, class... B, class... R>
struct concat<list<A...>, list<B...>, R...> : concat<list<A..., B...>, R...> {};

// Does N's tree read a let's placeholder (a value defined only inside its let)? A chain's layers count
// as reading one (its layers are one type over different weights).
template <class N>
constexpr bool reads_placeholder() {
  if constexpr (detail::is_leaf_v<N>) return !std::is_void_v<detail::slot_of_t<N>>;
  else if constexpr (detail::is_terminal_v<N>) return false;
  else if constexpr (detail::is_chain_node_v<N>) return true;
  else return []<class... C>(detail::tuple<C...>*) { return (false || ... || reads_placeholder<C>()); }(static_cast<detail::children_t<N>*>(nullptr));
}

// The slots N's tree reads (their slot_ref types; a view of a slot reads the whole slot).
template <class N>
struct slots_read;
template <class C>
struct slots_read_of;
template <class... C>
struct slots_read_of<detail::tuple<C...>> : concat<typename slots_read<C>::type...> {};
template <class N>
struct slots_read {
  using type = typename std::conditional_t<
      detail::is_leaf_v<N>, std::type_identity<std::conditional_t<std::is_void_v<detail::slot_read_t<N>>, list<>, list<detail::slot_read_t<N>>>>,
      std::conditional_t<detail::is_terminal_v<N>, std::type_identity<list<>>, slots_read_of<detail::children_t<N>>>>::type;
};
// The slots statement S writes: an assignment's destination, or a host call's arguments (it may write
// them).
template <class S>
struct slots_written;
template <class D, class E>
struct slots_written<detail::assign_stmt<D, E>> : slots_read<D> {};
template <class F, class... A>
struct slots_written<detail::host_stmt<F, A...>> : concat<typename slots_read<A>::type...> {};

template <class W, class... R>
constexpr bool one_of(list<R...>*) {
  return (false || ... || std::is_same_v<W, R>);
}
template <class... W, class R>
constexpr bool any_of_in(list<W...>*, [[maybe_unused]] R* r) {
  return (false || ... || one_of<W>(r));
}

// What save_forward may save: a node that runs a kernel of its own and whose only run-time data besides
// its children are compared by same_value below.
template <class N>
inline constexpr bool saveable_v = is_gemm_driven_v<N> || detail::is_attention_grad_node_v<N>;

// A GEMM-driven node's operand that the planner computes into a buffer before the product reads it (an
// elementwise matrix, seen through views: the logits' gradient under a classifier head, which both the
// input's and the weights' gradient products read): saved where two products read it, it is computed
// once instead of once per product, into a slot instead of each product's buffer.
template <class C>
struct computed_operand {
  using base = view_base_t<C>;
  using type = std::conditional_t<detail::is_map_node_v<base> && !reads_placeholder<base>(), list<base>, list<>>;
};
template <class N>
struct computed_operands {
  using type = list<>;
};
template <class N>
  requires is_gemm_driven_v<N>
struct computed_operands<N> {
  using type = decltype([]<class... C>(detail::tuple<C...>*) { return typename concat<typename computed_operand<C>::type...>::type{}; }(
      static_cast<detail::children_t<N>*>(nullptr)));
};

// The saveable nodes of N's tree, in post-order (children first; a product's computed operands just
// before it), one entry per occurrence. A chain is not entered.
template <class N>
struct gemms;
template <class C>
struct gemms_of;
template <class... C>
struct gemms_of<detail::tuple<C...>> : concat<typename gemms<C>::type...> {};
template <class N>
struct gemms {
  using below = typename std::conditional_t<detail::is_terminal_v<N> || detail::is_chain_node_v<N>, std::type_identity<list<>>,
                                            gemms_of<detail::children_t<N>>>::type;
  using type = std::conditional_t<saveable_v<N> && !reads_placeholder<N>(),
                                  typename concat<below, typename computed_operands<N>::type, list<N>>::type, below>;
};

// What statement S reads that could be saved: its value's GEMMs (an assign), or none.
template <class S>
struct statement_gemms {
  using type = list<>;
};
template <class D, class E>
struct statement_gemms<detail::assign_stmt<D, E>> : gemms<E> {};

template <class T, class... X>
constexpr int count_in(list<X...>*) {
  return (0 + ... + int(std::is_same_v<T, X>));
}
template <class T, class... X>
constexpr int index_in(list<X...>*) {
  constexpr bool eq[] = {std::is_same_v<T, X>..., false};
  for (int i = 0; i < int(sizeof...(X)); ++i)
    if (eq[i]) return i;
  return -1;
}

// Saved: read in at least two places (two statements, or twice in one), and no statement from the
// first reader to the last writes a slot the value reads (its value would change between them).
template <class T, class... L, class... W>
constexpr bool keep(list<L...>*, list<W...>*) {
  constexpr int c[] = {count_in<T>(static_cast<L*>(nullptr))..., 0};
  constexpr bool writes[] = {any_of_in(static_cast<W*>(nullptr), static_cast<typename slots_read<T>::type*>(nullptr))..., false};
  int first = -1, last = -1, total = 0;
  for (int j = 0; j < int(sizeof...(L)); ++j)
    if (c[j]) {
      if (first < 0) first = j;
      last = j, total += c[j];
    }
  if (total < 2) return false;
  for (int j = first; j < last; ++j)
    if (writes[j]) return false;
  return true;
}
// The saved types, in order of first appearance (so a value comes after the saved values it reads).
template <class Kept, class Rest, class PerStatement, class Writes>
struct select;
template <class... K, class P, class W>
struct select<list<K...>, list<>, P, W> {
  using type = list<K...>;
};
template <class... K, class T, class... R, class P, class W>
struct select<list<K...>, list<T, R...>, P, W>
    : select<std::conditional_t<keep<T>(static_cast<P*>(nullptr), static_cast<W*>(nullptr)) && !(false || ... || std::is_same_v<T, K>),
                                list<K..., T>, list<K...>>,
             list<R...>, P, W> {};

template <int I, class Kept>
struct kept_at;
template <int I, class... K>
struct kept_at<I, list<K...>> {
  using type = std::tuple_element_t<std::size_t(I), std::tuple<K...>>;
};
template <int I, class Kept>
using kept_at_t = typename kept_at<I, Kept>::type;

template <class S>
struct step_info;
template <class... S>
struct step_info<detail::statements_node<S...>> {
  static_assert((!detail::is_statements_v<S> && ...), "tenfold::save_forward: the statements must be a flat list (no nested statements(...))");
  using per_statement = list<typename statement_gemms<S>::type...>;
  using kept = typename select<list<>, typename concat<typename statement_gemms<S>::type...>::type, per_statement,
                              list<typename slots_written<S>::type...>>::type;
  static constexpr int statement_count = sizeof...(S);
  static constexpr int saved = kept::size;
  // The first and the last statement reading saved value i.
  template <int I>
  static constexpr std::pair<int, int> readers() {
    return []<class... L>(list<L...>*) {
      using T = kept_at_t<I, kept>;
      constexpr int c[] = {count_in<T>(static_cast<L*>(nullptr))...};
      int first = -1, last = -1;
      for (int j = 0; j < int(sizeof...(L)); ++j)
        if (c[j]) {
          if (first < 0) first = j;
          last = j;
        }
      return std::pair<int, int>{first, last};
    }(static_cast<per_statement*>(nullptr));
  }
};

// The slot of saved value I.
template <class Kept, class Key, int I>
using saved_slot = slot<std::remove_const_t<typename kept_at_t<I, Kept>::value_type>, typename kept_at_t<I, Kept>::shape_type,
                        detail::saved_value<I, Key>>;

// n with the placeholders of the let Tag read from the slot whose storage is H instead (each with its
// own shape, strides and offset: the views folded into it). A nested let of the same lambda binds Tag
// anew in its body, which is left alone.
template <class Tag, class H, class N>
auto over_slot(const N& n) {
  if constexpr (detail::is_leaf_v<N>) {
    if constexpr (std::is_same_v<detail::slot_of_t<N>, Tag>)
      return detail::leaf<typename N::element_type, typename N::shape_type, N::strides, N::offset, H>{};
    else return n;
  } else if constexpr (detail::is_terminal_v<N> || detail::is_chain_node_v<N>) return n;
  else if constexpr (detail::is_let_node_v<N>) {
    auto v = over_slot<Tag, H>(n.value);
    if constexpr (std::is_same_v<typename N::tag_type, Tag>)
      return n.with_children(detail::tuple<decltype(v), typename N::body_node>{std::move(v), n.body});
    else {
      auto b = over_slot<Tag, H>(n.body);
      return n.with_children(detail::tuple<decltype(v), decltype(b)>{std::move(v), std::move(b)});
    }
  } else return walk::rebuild(n, [](const auto& c) { return over_slot<Tag, H>(c); });
}

// Is V a whole slot (canonical strides, no offset)?
template <class V>
constexpr bool is_whole_slot() {
  if constexpr (detail::is_leaf_v<V>) return !std::is_void_v<detail::slot_read_t<V>> && V::contiguous;
  else return false;
}

// n with every saved value read from its slot (n itself too, when it is one). A let whose value becomes
// a whole slot is dropped: its placeholders read the slot (what the let did, in place), so what its
// body computes from them no longer reads a placeholder, and a second round can save it (the logits'
// gradient under cross-entropy's log_softmax, times the output layer's weights, that a norm's backward
// reads three times).
template <class Kept, class Key, class N>
auto substitute(const N& n);
template <class Kept, class Key, class N>
auto substitute_children(const N& n) {
  if constexpr (detail::is_terminal_v<N> || detail::is_chain_node_v<N>) return n;
  else return walk::rebuild(n, [](const auto& c) { return substitute<Kept, Key>(c); });
}
template <class Kept, class Key, class N>
auto substitute(const N& n) {
  constexpr int i = index_in<N>(static_cast<Kept*>(nullptr));
  if constexpr (i >= 0) return saved_slot<Kept, Key, i>{};
  else if constexpr (detail::is_let_node_v<N>) {
    auto v = substitute<Kept, Key>(n.value);
    using V = decltype(v);
    if constexpr (is_whole_slot<V>()) return substitute<Kept, Key>(over_slot<typename N::tag_type, typename V::holder_type>(n.body));
    else return n.with_children(detail::tuple<V, decltype(substitute<Kept, Key>(n.body))>{std::move(v), substitute<Kept, Key>(n.body)});
  } else return substitute_children<Kept, Key>(n);
}

// Do a and b hold the same data? Nodes whose only runtime data are their children (maps, reductions,
// views, GEMMs, convolutions, lets) compare child by child (their padding bytes are unspecified), an
// attention gradient node its scale too; the others as same::same_data does (a leaf: its pointer).
template <class N>
bool same_value(const N& a, const N& b) {
  if constexpr (detail::is_map_node_v<N> || detail::is_reduce_node_v<N> || detail::is_view_of_v<N> || is_gemm_driven_v<N> ||
                detail::is_let_node_v<N> || detail::is_attention_grad_node_v<N>) {
    if constexpr (detail::is_attention_grad_node_v<N>)
      if (a.scale != b.scale) return false;
    return detail::unpack(
        [&b](const auto&... x) {
          return detail::unpack([&x...](const auto&... y) { return (true && ... && same_value(x, y)); }, detail::children(b));
        },
        detail::children(a));
  } else return same::same_data(a, b);
}

// Where the saved values are in the statements: the first copy of each, every later copy compared
// with it (the same data, or an error naming the statement).
template <class Kept>
struct finder {
  const void* first[Kept::size > 0 ? Kept::size : 1]{};
  int statement = 0;
  template <class N>
  void visit(const N& n) {
    if constexpr (!detail::is_terminal_v<N> && !detail::is_chain_node_v<N>)
      detail::unpack([this](const auto&... c) { (visit(c), ...); }, detail::children(n));
    constexpr int i = index_in<N>(static_cast<Kept*>(nullptr));
    if constexpr (i >= 0) {
      if (!first[i]) first[i] = &n;
      else if (!same_value(*static_cast<const N*>(first[i]), n))
        throw error(detail::message("tenfold::save_forward: statement ", statement, " reads a value of the type of saved value ", i,
                                    " (", N::str(), ") over other data than the statement before it: two values of one type "
                                    "cannot share a slot; evaluate these statements without save_forward"));
    }
  }
};

// Does statement s write memory that value v reads?
template <class S, class V>
bool writes_into(const S& s, const V& v) {
  const auto hits = [&v](const auto& dst) {
    using D = std::remove_cvref_t<decltype(dst)>;
    if constexpr (!std::is_void_v<detail::slot_read_t<D>>) return false; // a slot: decided by the types (keep)
    else return aliases(dst, v, true);
  };
  if constexpr (detail::is_assign_stmt_v<S>) return hits(detail::get<0>(s.args));
  else return detail::unpack([&hits](const auto&... a) { return (false || ... || hits(a)); }, s.args);
}

template <class Key, class... S, std::size_t... J, std::size_t... I>
auto rewrite(const detail::statements_node<S...>& s, std::index_sequence<J...>, std::index_sequence<I...>) {
  using info = step_info<detail::statements_node<S...>>;
  using kept = typename info::kept;
  finder<kept> f;
  (((f.statement = int(J)), [&f](const auto& st) {
     if constexpr (detail::is_assign_stmt_v<std::remove_cvref_t<decltype(st)>>) f.visit(detail::get<1>(st.args));
   }(detail::get<J>(s.args))),
   ...);
  // No statement between a saved value's first reader and its last writes what it reads.
  [[maybe_unused]] const auto check = [&]<std::size_t K>() {
    using T = kept_at_t<int(K), kept>;
    constexpr auto r = info::template readers<int(K)>();
    const T& v = *static_cast<const T*>(f.first[K]);
    const bool bad[] = {(int(J) >= r.first && int(J) < r.second && writes_into(detail::get<J>(s.args), v))..., false};
    for (int j = 0; j < int(sizeof...(S)); ++j)
      if (bad[j])
        throw error(detail::message("tenfold::save_forward: statement ", j, " writes memory that saved value ", K, " (", T::str(),
                                    ") reads, and statement ", r.second, " reads it after: put such updates after the statements "
                                    "whose shared values are saved"));
  };
  (check.template operator()<I>(), ...);
  // Statement j, preceded by the assignments of the values it is the first to read.
  const auto group = [&]<std::size_t Jc>() {
    const auto& st = detail::get<Jc>(s.args);
    const auto own = [&]() {
      using St = std::remove_cvref_t<decltype(st)>;
      if constexpr (detail::is_assign_stmt_v<St>) {
        auto d = detail::get<0>(st.args);
        auto v = substitute<kept, Key>(detail::get<1>(st.args));
        return detail::assign_stmt<decltype(d), decltype(v)>{{std::move(d), std::move(v)}};
      } else return st;
    };
    const auto save = [&]<std::size_t K>() {
      using T = kept_at_t<int(K), kept>;
      if constexpr (info::template readers<int(K)>().first == int(Jc)) {
        auto v = substitute_children<kept, Key>(*static_cast<const T*>(f.first[K]));
        using A = detail::assign_stmt<saved_slot<kept, Key, int(K)>, decltype(v)>;
        return detail::statements_node<A>{{A{{{}, std::move(v)}}}};
      } else return detail::statements_node<>{};
    };
    return detail::statements_node<decltype(save.template operator()<I>())..., decltype(own())>{{save.template operator()<I>()..., own()}};
  };
  return detail::statements_node<decltype(group.template operator()<J>())...>{{group.template operator()<J>()...}};
}

template <class Key, class... S>
auto round(const detail::statements_node<S...>& s) {
  using info = step_info<detail::statements_node<S...>>;
  return rewrite<Key>(s, std::index_sequence_for<S...>{}, std::make_index_sequence<std::size_t(info::saved)>{});
}

// The statements of nested groups as one flat list, in order.
template <class S>
auto flat_tuple(const S& s) {
  if constexpr (detail::is_statements_v<S>) return detail::unpack([](const auto&... x) { return std::tuple_cat(flat_tuple(x)...); }, s.args);
  else return std::tuple<S>{s};
}
template <class S>
auto flatten(const S& s) {
  return std::apply([](auto&&... x) { return detail::statements_node<std::remove_cvref_t<decltype(x)>...>{{std::move(x)...}}; }, flat_tuple(s));
}
template <class Key>
struct second_round {};
} // namespace plan::saved

// s with the GEMM, convolution and attention gradient outputs (and the products' computed operands)
// that several of its statements read computed once, into slots (see above). Throws tenfold::error
// when a saved value's copies differ or a statement between its readers writes what it reads. Two
// rounds: the second saves what the first made visible by dropping lets over saved values.
template <class Key = void, class... S>
auto save_forward(const detail::statements_node<S...>& s) {
  return plan::saved::round<plan::saved::second_round<Key>>(plan::saved::flatten(plan::saved::round<Key>(s)));
}
} // namespace tenfold
