#pragma once
// let(value, body): a value computed once and read any number of times.
//
// An expression is a tree, so an operand used twice — the input of layer_norm (mean, variance, the
// normalised output), the residual stream of a transformer block — is a copy in two places, and a
// matmul inside it would be computed twice. `let(v, [&](auto x) { return f(x); })` names the value:
// `x` is a placeholder leaf, and every read of it in the body reads one buffer that the evaluator
// fills once, before the body runs. The planner gives that buffer one arena slot, alive from its
// loop nest to the last nest that reads it.
//
// A placeholder is an ordinary leaf (contiguous, row-major) whose storage is a slot: views of it fold
// into its strides as for any tensor, and fusion treats it as memory. The slot's identity is the type
// of the body's lambda, which is unique to each `let` in the program text; placeholders resolve
// lexically, to the nearest enclosing `let` with that lambda, so a helper that uses `let` and is called
// twice with the same types binds each call's placeholders to its own value.
#include "tenfold/core/expr.hpp"

namespace tenfold::detail {

// Storage of a placeholder: filled in by the evaluator once the bound value has a buffer.
template <class T, class Tag>
struct slot_holder {
  T* ptr = nullptr;
  TENFOLD_HD T* data() const { return ptr; }
};

template <class T, class S, class Tag>
using placeholder = leaf<const T, S, canon(strides_of<S>), 0, slot_holder<const T, Tag>>;

template <class E>
struct slot_of {
  using type = void;
};
template <class T, class S, auto St, index_t O, class U, class Tag>
struct slot_of<leaf<T, S, St, O, slot_holder<U, Tag>>> {
  using type = Tag;
};
// The tag of the let a leaf reads (void for a leaf on a tensor).
template <class E>
using slot_of_t = typename slot_of<E>::type;

template <class Tag, class V, class B>
struct let_node : node_tag {
  using tag_type = Tag;
  using value_node = V;
  using body_node = B;
  using value_type = typename B::value_type;
  using shape_type = typename B::shape_type;
  static constexpr int rank = shape_type::rank;
  // A value that is already a contiguous tensor is read in place; anything else (including a temporary
  // tensor the let owns, which may move) gets a buffer.
  static constexpr bool in_place = [] {
    if constexpr (is_leaf_v<V>) return V::contiguous && !owns_storage_v<typename V::holder_type>;
    else return false;
  }();
  V value;
  B body;
  template <class V2, class B2>
  constexpr auto with_children(detail::tuple<V2, B2>&& c) const {
    return let_node<Tag, V2, B2>{{}, detail::get<0>(std::move(c)), detail::get<1>(std::move(c))};
  }

  static std::string str() { return "let(" + V::str() + ") in " + B::str(); }
};

template <class E>
inline constexpr bool is_let_node_v = false;
template <class Tag, class V, class B>
inline constexpr bool is_let_node_v<let_node<Tag, V, B>> = true;

} // namespace tenfold::detail

namespace tenfold {
// let(value, body): `body` is called once, with a placeholder for `value`, and returns the
// expression in which the value is used; the value is computed once per evaluation.
template <expression V, class F>
auto let(V&& value, F&& body) {
  auto v = detail::as_node(std::forward<V>(value));
  using VN = decltype(v);
  using P = detail::placeholder<typename VN::value_type, typename VN::shape_type, std::remove_cvref_t<F>>;
  static_assert(std::is_invocable_v<F, P>, "tenfold::let: the body must be callable with the bound value");
  auto b = detail::as_node(std::forward<F>(body)(P{}));
  return detail::let_node<std::remove_cvref_t<F>, VN, decltype(b)>{{}, std::move(v), std::move(b)};
}
} // namespace tenfold
