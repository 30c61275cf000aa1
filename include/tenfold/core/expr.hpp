#pragma once
// Expression nodes. A node holds data only — operands and a static shape — and can compute one element
// at a multi-index (`at`, usable on host and device). Backends supply the fast loops (cpu/, cuda/).
//
// Leaves are strided: every affine view (broadcast, permute, slice, flip, squeeze) is folded into a
// leaf's compile-time strides and offset, and views over elementwise nodes are pushed down to their
// leaves. So an elementwise tree bottoms out in `leaf` and `scalar_node` only, which is what lets the CPU
// evaluator vectorise broadcast and transposed operands along the innermost axis.
#include <array>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tenfold/core/dtype.hpp"
#include "tenfold/core/shape.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold {
template <class T, class S = shape<>>
class Tensor;
template <class T, class S>
class TensorMap;

// Every expression node derives from this, which also makes namespace tenfold (and so the operators)
// reachable by argument-dependent lookup from any node. Nodes are aggregates; the deleted constructor
// stops brace elision from quietly slicing a node of the wrong type into this empty base.
struct node_base {
  node_base() = default;
  template <class T>
  node_base(const T&) = delete;
};

namespace detail {

using node_tag = node_base;
template <class E>
inline constexpr bool is_node_v = std::is_base_of_v<node_tag, std::remove_cvref_t<E>>;

template <class E>
inline constexpr bool is_tensor_v = false;
template <class T, class S>
inline constexpr bool is_tensor_v<Tensor<T, S>> = true;
template <class T, class S>
inline constexpr bool is_tensor_v<TensorMap<T, S>> = true;
// A tensor that only borrows its elements (core/tensor_map.hpp): referenced even when a temporary.
template <class E>
inline constexpr bool borrows_elements_v = false;
// An operand that makes its own leaf (`x.as_leaf()`): a weight with a second layout beside its
// elements (cpu/prepacked.hpp). Referenced, as an lvalue Tensor is.
template <class E>
concept provides_leaf = requires(const E& e) { e.as_leaf(); };
template <class T, class S>
inline constexpr bool borrows_elements_v<TensorMap<T, S>> = true;
} // namespace detail

// Anything that can appear in an expression: a Tensor (or TensorMap) or an expression node.
template <class E>
concept expression = detail::is_node_v<E> || detail::is_tensor_v<std::remove_cvref_t<E>> ||
                     detail::provides_leaf<std::remove_cvref_t<E>>;
template <class X>
concept arithmetic_scalar = std::is_arithmetic_v<std::remove_cvref_t<X>> || is_half_v<std::remove_cvref_t<X>>;

namespace detail {

// ---- holders: how a leaf reaches its storage -------------------------------------------------------
// An lvalue Tensor is referenced; a temporary one is owned by value, so `auto e = exp(make()) * y;`
// never dangles.
template <class T>
struct ref_holder {
  T* ptr = nullptr;
  TENFOLD_HD T* data() const { return ptr; }
};
template <class Tn>
struct own_holder {
  Tn tensor;
  auto* data() const { return tensor.data(); }
  auto* data() { return tensor.data(); }
  index_t length() const requires(Tn::shape_type::has_bounded) { return tensor.length(); }
};
// An lvalue tensor of a bounded shape (shape<upto<N>, ...>): its elements and its run-time length, which
// an assignment to it sets.
template <class T>
struct bounded_ref_holder {
  T* ptr = nullptr;
  std::conditional_t<std::is_const_v<T>, const index_t, index_t>* len = nullptr;
  TENFOLD_HD T* data() const { return ptr; }
  index_t length() const { return *len; }
};

// Does a holder carry a run-time length?
template <class H>
concept has_length = requires(const H& h) { h.length(); };

// Does a holder own its storage (a temporary tensor moved into the expression)? Such storage may move
// with the expression, so it is never bound in place (core/let.hpp).
template <class H>
inline constexpr bool owns_storage_v = false;
template <class Tn>
inline constexpr bool owns_storage_v<own_holder<Tn>> = true;

template <class T, class S, auto Strides, index_t Offset, class Holder>
struct leaf : node_tag {
  using element_type = T; // may be const
  using value_type = std::remove_const_t<T>;
  using shape_type = S;
  static constexpr int rank = S::rank;
  static constexpr std::array<index_t, S::rank> strides = Strides;
  static constexpr index_t offset = Offset;
  static constexpr bool contiguous = Offset == 0 && Strides == strides_of<S>;
  using holder_type = Holder;
  // Does it read along a bounded axis? (A static operand broadcast along one has stride 0 there.)
  static constexpr bool reads_bounded = S::has_bounded && Strides[S::has_bounded ? S::bounded_axis : 0] != 0;
  Holder holder;

  TENFOLD_HD T* data() const { return const_cast<T*>(holder.data()); }
  // The run-time length of the bounded axis.
  index_t length() const requires(S::has_bounded) { return holder.length(); }
  TENFOLD_HD static constexpr index_t offset_of(const index_t* idx) {
    index_t o = Offset;
    for (int i = 0; i < S::rank; ++i) o += idx[i] * Strides[i];
    return o;
  }
  TENFOLD_HD compute_t<value_type> at(const index_t* idx) const {
    return static_cast<compute_t<value_type>>(data()[offset_of(idx)]);
  }
  static std::string str() {
    std::string s = std::string(dtype_name<value_type>()) + "[";
    for (int i = 0; i < S::rank; ++i)
      (s += i ? "," : "") += std::to_string(S::dims[i]); // (appends: see detail::message)
    return s + (contiguous ? "]" : "] view");
  }
};

template <class E>
inline constexpr bool is_leaf_v = false;
template <class T, class S, auto St, index_t O, class H>
inline constexpr bool is_leaf_v<leaf<T, S, St, O, H>> = true;

// A constant broadcast to any shape (scalar operands, fill values).
template <class T, class S = shape<>>
struct scalar_node : node_tag {
  using value_type = T;
  using shape_type = S;
  static constexpr int rank = S::rank;
  compute_t<T> value{};
  TENFOLD_HD compute_t<T> at(const index_t*) const { return value; }
  static std::string str() { return std::string(dtype_name<T>()); }
};

template <class E>
inline constexpr bool is_scalar_node_v = false;
template <class T, class S>
inline constexpr bool is_scalar_node_v<scalar_node<T, S>> = true;

// An elementwise op applied to operands that all have this node's shape (broadcasting was folded into
// the operands when the node was built). Op is a descriptor from ops/table.hpp.
template <class Op, class... C>
struct map_node : node_tag {
  using op_type = Op;
  using value_type = typename Op::template result_type<typename C::value_type...>;
  using shape_type = typename std::tuple_element_t<0, std::tuple<C...>>::shape_type;
  static constexpr int rank = shape_type::rank;
  static_assert((std::is_same_v<typename C::shape_type, shape_type> && ...));
  detail::tuple<C...> args;
  // The same node over other children (every node with children declares this; plan/walk.hpp).
  template <class... D>
  constexpr auto with_children(detail::tuple<D...>&& c) const {
    return map_node<Op, D...>{{}, std::move(c)};
  }

  TENFOLD_HD compute_t<value_type> at(const index_t* idx) const {
    return detail::unpack([&](const auto&... c) { return compute_t<value_type>(Op::template apply<value_type>(c.at(idx)...)); }, args);
  }
  static std::string str() {
    std::string s = std::string(Op::name) + "(";
    bool first = true;
    ((s += (first ? "" : ", ") + C::str(), first = false), ...);
    return s + ")";
  }
};

template <class E>
inline constexpr bool is_map_node_v = false;
template <class Op, class... C>
inline constexpr bool is_map_node_v<map_node<Op, C...>> = true;

// Leaves, scalars and elementwise ops only: a value that reads each operand at the element it writes.
template <class N>
constexpr bool is_elementwise_tree() {
  if constexpr (is_leaf_v<N> || is_scalar_node_v<N>) return true;
  else if constexpr (is_map_node_v<N>)
    return []<class... C>(tuple<C...>*) { return (is_elementwise_tree<C>() && ...); }(static_cast<decltype(N::args)*>(nullptr));
  else return false;
}

// ---- turning user operands into nodes ---------------------------------------------------------------
template <class X>
auto as_node(X&& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_node_v<D>) {
    return D(std::forward<X>(x));
  } else if constexpr (provides_leaf<D>) {
    static_assert(std::is_lvalue_reference_v<X>, "tenfold: a prepacked weight is read in place: name it (a variable), not a temporary");
    return x.as_leaf();
  } else {
    using T = typename D::value_type;
    using S = typename D::shape_type;
    if constexpr (S::has_bounded && std::is_lvalue_reference_v<X>) {
      using E = std::remove_reference_t<decltype(*x.data())>;
      return leaf<E, S, canon(strides_of<S>), 0, bounded_ref_holder<E>>{{}, {x.data(), x.length_data()}};
    } else if constexpr (S::has_bounded && borrows_elements_v<D>) {
      // (a temporary map of a bounded shape: held by value, its pointer and its length)
      using E = std::remove_reference_t<decltype(*x.data())>;
      return leaf<E, S, canon(strides_of<S>), 0, own_holder<D>>{{}, {std::move(x)}};
    } else if constexpr (std::is_lvalue_reference_v<X> || borrows_elements_v<D>) {
      using E = std::remove_reference_t<decltype(*x.data())>; // const T for const tensors
      return leaf<E, S, canon(strides_of<S>), 0, ref_holder<E>>{{}, {x.data()}};
    } else {
      return leaf<T, S, canon(strides_of<S>), 0, own_holder<D>>{{}, {std::move(x)}};
    }
  }
}
template <class X>
using node_t = decltype(as_node(std::declval<X>()));

// Every node can name itself, for errors and traces.
template <class E>
std::string str() {
  return node_t<E>::str();
}
} // namespace detail
} // namespace tenfold
