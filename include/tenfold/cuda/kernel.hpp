#pragma once
// How an expression type becomes a kernel. Every kernel of this backend is one template,
// `kernel<Body, Key, ...>`, where Body names the work (flat, indexed, rows, scan, gemm) and Key is the
// launch's argument type (destination and tree) with its class-type template arguments re-spelled.
//
// Why the re-spelling: expression types carry std::array values as template arguments (a leaf's
// strides, a view's index map, a reduction's axis mask). nvcc compiles such types in device code, but
// the host stub it generates for a kernel spells the kernel's template arguments back as source, and it
// cannot spell a class-type value (nvcc 13: "template argument 1 is invalid" in the .stub.c). So the
// kernel is named by an encoded type in which each such array is an integer pack, and receives its
// arguments as plain bytes; the device code decodes the type and reads the bytes as the original nodes.
#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>
#include <utility>

#include "tenfold/core/attention_grad_node.hpp"
#include "tenfold/core/attention_node.hpp"
#include "tenfold/core/conv_node.hpp"
#include "tenfold/core/gather_node.hpp"
#include "tenfold/core/scatter_node.hpp"
#include "tenfold/core/reduce_node.hpp"
#include "tenfold/core/view.hpp"
#include "tenfold/core/views_compose.hpp"
#include "tenfold/cuda/error.hpp"
#include "tenfold/cuda/memory.hpp"

namespace tenfold::cuda::detail {

template <class T, T... V>
struct value_pack {};

template <auto A, class I = std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<decltype(A)>>>>
struct pack_of;
template <auto A, std::size_t... I>
struct pack_of<A, std::index_sequence<I...>> {
  using type = value_pack<typename std::remove_cvref_t<decltype(A)>::value_type, A[I]...>;
};
template <class T, T... V>
constexpr std::array<T, sizeof...(V)> array_of(value_pack<T, V...>) {
  return tenfold::detail::canon(std::array<T, sizeof...(V)>{V...});
}

// Encoded forms: of the templates that take arrays, and of every other class template (an inert
// list of its encoded arguments: never instantiating a node over keys).
template <template <class...> class Tm, class... A>
struct type_key {};
template <class T, class S, class Strides, index_t Offset, class Holder>
struct leaf_key {};
template <class In, class Out, class Src, class Scale, class Off>
struct affine_key {};
template <class In, class Out, class Coef, class Off>
struct linear_key {};
template <class Op, class C, class Mask, bool Keep>
struct reduce_key {};
// ...and of those that take a value next to a type holding arrays.
template <class Op, class C, int Axis>
struct scan_key {};
template <class C, class Pads>
struct pad_key {};
template <int Axis, class... C>
struct concat_key {};
// ...and of the convolution, whose geometry (a class) becomes its fields as an index_t pack.
template <class CX, class CW, class Geometry>
struct conv_key {};
// ...and of attention, whose causal flag is a value next to its operand types.
template <class CQ, class CK, class CV, bool Causal>
struct attention_key {};
template <tenfold::detail::attention_part Part, bool Causal, class... C>
struct attention_grad_key {};
// ...and of take / take_along_axis and their adjoint, whose axis and kind are values next to types.
template <int Axis, bool Along, class... C>
struct take_key {};
template <int Axis, bool Along, class S, class... C>
struct scatter_key {};

// key_of(N*): std::type_identity of N's encoded form. A function with a deduced return type, not a
// trait's member typedef: nvcc's stub spells a type by the path it was reached through, and a path
// through `encode<N>::type` would spell N again; a deduced return type is spelled as the type itself.
template <class T>
auto key_of(T*);
template <template <class...> class Tm, class... A>
auto key_of(Tm<A...>*);
template <class T, class S, auto St, index_t O, class H>
auto key_of(tenfold::detail::leaf<T, S, St, O, H>*);
template <class In, class Out, std::array<int, In::rank> Src, std::array<index_t, In::rank> Scale, std::array<index_t, In::rank> Off>
auto key_of(tenfold::detail::affine_map<In, Out, Src, Scale, Off>*);
template <class In, class Out, std::array<index_t, In::rank * Out::rank> Coef, std::array<index_t, In::rank> Off>
auto key_of(tenfold::detail::linear_map<In, Out, Coef, Off>*);
template <class Op, class C, auto Mask, bool Keep>
auto key_of(tenfold::detail::reduce_node<Op, C, Mask, Keep>*);
template <class Op, class C, int Axis>
auto key_of(tenfold::detail::scan_node<Op, C, Axis>*);
template <class C, auto Pads>
auto key_of(tenfold::detail::pad_node<C, Pads>*);
template <int Axis, class... C>
auto key_of(tenfold::detail::concat_node<Axis, C...>*);
template <class CX, class CW, conv_geometry G>
auto key_of(tenfold::detail::conv2d_node<CX, CW, G>*);
template <class CQ, class CK, class CV, bool C>
auto key_of(tenfold::detail::attention_node<CQ, CK, CV, C>*);
template <tenfold::detail::attention_part P, bool Causal, class... C>
auto key_of(tenfold::detail::attention_grad_node<P, Causal, C...>*);
template <int Axis, bool Along, class S, class I>
auto key_of(tenfold::detail::take_node<Axis, Along, S, I>*);
template <int Axis, bool Along, class S, class G, class I>
auto key_of(tenfold::detail::scatter_add_node<Axis, Along, S, G, I>*);

template <class T>
using key_t = typename decltype(key_of(static_cast<T*>(nullptr)))::type;

template <class T>
auto key_of(T*) {
  return std::type_identity<T>{};
}
template <template <class...> class Tm, class... A>
auto key_of(Tm<A...>*) {
  return std::type_identity<type_key<Tm, key_t<A>...>>{};
}
template <class T, class S, auto St, index_t O, class H>
auto key_of(tenfold::detail::leaf<T, S, St, O, H>*) {
  return std::type_identity<leaf_key<T, S, typename pack_of<St>::type, O, key_t<H>>>{};
}
template <class In, class Out, std::array<int, In::rank> Src, std::array<index_t, In::rank> Scale, std::array<index_t, In::rank> Off>
auto key_of(tenfold::detail::affine_map<In, Out, Src, Scale, Off>*) {
  return std::type_identity<affine_key<In, Out, typename pack_of<Src>::type, typename pack_of<Scale>::type, typename pack_of<Off>::type>>{};
}
template <class In, class Out, std::array<index_t, In::rank * Out::rank> Coef, std::array<index_t, In::rank> Off>
auto key_of(tenfold::detail::linear_map<In, Out, Coef, Off>*) {
  return std::type_identity<linear_key<In, Out, typename pack_of<Coef>::type, typename pack_of<Off>::type>>{};
}
template <class Op, class C, auto Mask, bool Keep>
auto key_of(tenfold::detail::reduce_node<Op, C, Mask, Keep>*) {
  return std::type_identity<reduce_key<Op, key_t<C>, typename pack_of<Mask>::type, Keep>>{};
}
template <class Op, class C, int Axis>
auto key_of(tenfold::detail::scan_node<Op, C, Axis>*) {
  return std::type_identity<scan_key<Op, key_t<C>, Axis>>{};
}
template <class C, auto Pads>
auto key_of(tenfold::detail::pad_node<C, Pads>*) {
  return std::type_identity<pad_key<key_t<C>, typename pack_of<Pads>::type>>{};
}
template <int Axis, class... C>
auto key_of(tenfold::detail::concat_node<Axis, C...>*) {
  return std::type_identity<concat_key<Axis, key_t<C>...>>{};
}

template <class CX, class CW, conv_geometry G>
auto key_of(tenfold::detail::conv2d_node<CX, CW, G>*) {
  using fields = value_pack<index_t, G.stride_h, G.stride_w, G.pad_h, G.pad_w, G.dil_h, G.dil_w, G.out_pad_h, G.out_pad_w,
                            G.groups, index_t(G.layout), index_t(G.transposed)>;
  return std::type_identity<conv_key<key_t<CX>, key_t<CW>, fields>>{};
}
template <class CQ, class CK, class CV, bool C>
auto key_of(tenfold::detail::attention_node<CQ, CK, CV, C>*) {
  return std::type_identity<attention_key<key_t<CQ>, key_t<CK>, key_t<CV>, C>>{};
}
template <tenfold::detail::attention_part P, bool Causal, class... C>
auto key_of(tenfold::detail::attention_grad_node<P, Causal, C...>*) {
  return std::type_identity<attention_grad_key<P, Causal, key_t<C>...>>{};
}
template <int Axis, bool Along, class S, class I>
auto key_of(tenfold::detail::take_node<Axis, Along, S, I>*) {
  return std::type_identity<take_key<Axis, Along, key_t<S>, key_t<I>>>{};
}
template <int Axis, bool Along, class S, class G, class I>
auto key_of(tenfold::detail::scatter_add_node<Axis, Along, S, G, I>*) {
  return std::type_identity<scatter_key<Axis, Along, S, key_t<G>, key_t<I>>>{};
}
template <index_t... V>
constexpr conv_geometry geometry_of(value_pack<index_t, V...>) {
  constexpr index_t v[] = {V...};
  return {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], conv_layout(v[9]), v[10] != 0};
}

template <class T>
struct decode {
  using type = T;
};
template <template <class...> class Tm, class... A>
struct decode<type_key<Tm, A...>> {
  using type = Tm<typename decode<A>::type...>;
};
template <class T, class S, class St, index_t O, class H>
struct decode<leaf_key<T, S, St, O, H>> {
  using type = tenfold::detail::leaf<T, S, array_of(St{}), O, typename decode<H>::type>;
};
template <class In, class Out, class Src, class Scale, class Off>
struct decode<affine_key<In, Out, Src, Scale, Off>> {
  using type = tenfold::detail::affine_map<In, Out, array_of(Src{}), array_of(Scale{}), array_of(Off{})>;
};
template <class In, class Out, class Coef, class Off>
struct decode<linear_key<In, Out, Coef, Off>> {
  using type = tenfold::detail::linear_map<In, Out, array_of(Coef{}), array_of(Off{})>;
};
template <class Op, class C, class Mask, bool Keep>
struct decode<reduce_key<Op, C, Mask, Keep>> {
  using type = tenfold::detail::reduce_node<Op, typename decode<C>::type, array_of(Mask{}), Keep>;
};

template <class Op, class C, int Axis>
struct decode<scan_key<Op, C, Axis>> {
  using type = tenfold::detail::scan_node<Op, typename decode<C>::type, Axis>;
};
template <class C, class Pads>
struct decode<pad_key<C, Pads>> {
  using type = tenfold::detail::pad_node<typename decode<C>::type, array_of(Pads{})>;
};
template <int Axis, class... C>
struct decode<concat_key<Axis, C...>> {
  using type = tenfold::detail::concat_node<Axis, typename decode<C>::type...>;
};
template <class CX, class CW, class Geometry>
struct decode<conv_key<CX, CW, Geometry>> {
  using type = tenfold::detail::conv2d_node<typename decode<CX>::type, typename decode<CW>::type, geometry_of(Geometry{})>;
};
template <class CQ, class CK, class CV, bool C>
struct decode<attention_key<CQ, CK, CV, C>> {
  using type = tenfold::detail::attention_node<typename decode<CQ>::type, typename decode<CK>::type, typename decode<CV>::type, C>;
};
template <tenfold::detail::attention_part P, bool Causal, class... C>
struct decode<attention_grad_key<P, Causal, C...>> {
  using type = tenfold::detail::attention_grad_node<P, Causal, typename decode<C>::type...>;
};
template <int Axis, bool Along, class... C>
struct decode<take_key<Axis, Along, C...>> {
  using type = tenfold::detail::take_node<Axis, Along, typename decode<C>::type...>;
};
template <int Axis, bool Along, class S, class... C>
struct decode<scatter_key<Axis, Along, S, C...>> {
  using type = tenfold::detail::scatter_add_node<Axis, Along, S, typename decode<C>::type...>;
};
template <class T>
using decode_t = typename decode<T>::type;

// What one launch receives: where to write, what to compute, and whether the reductions of each kind
// in n hold the same operands (plan/same_reductions.hpp: the row kernels then compute each kind once).
template <class Dst, class N>
struct kernel_args {
  Dst dst;
  N n;
  bool share = false;
};

template <std::size_t Bytes, std::size_t Align>
struct alignas(Align) kernel_bytes {
  unsigned char bytes[Bytes];
};

template <class Body, class Key, std::size_t Bytes, std::size_t Align>
__global__ void __launch_bounds__(Body::max_threads) kernel(const kernel_bytes<Bytes, Align> packed) {
  using Args = decode_t<typename Key::type>;
  // The nodes are trivially copyable aggregates of pointers and numbers (std::tuple included, in
  // effect): reading the bytes as them is what passing them by value would have done.
  const Args& args = *reinterpret_cast<const Args*>(packed.bytes);
  if constexpr (requires { Body::run(args.dst, args.n, args.share); }) Body::run(args.dst, args.n, args.share);
  else Body::run(args.dst, args.n);
}

// (Key arrives deduced, see key_of.)
template <class Body, class Key, class Args>
void launch_keyed(Key, dim3 grid, dim3 block, stream_ref s, const Args& args, const char* what) {
  static_assert(std::is_same_v<decode_t<typename Key::type>, Args>, "tenfold::cuda: a node type does not survive the kernel-name encoding");
  kernel_bytes<sizeof(Args), alignof(Args)> packed;
  std::memcpy(packed.bytes, static_cast<const void*>(&args), sizeof(Args));
  kernel<Body, Key, sizeof(Args), alignof(Args)><<<grid, block, 0, s.handle>>>(packed);
  check_launch(what);
}

// Launches Body over (dst, n) on stream s; a launch error throws tenfold::error naming `what`.
template <class Body, class Dst, class N>
void launch(dim3 grid, dim3 block, stream_ref s, const Dst& dst, const N& n, const char* what, bool share = false) {
  using Args = kernel_args<Dst, N>;
  launch_keyed<Body>(key_of(static_cast<Args*>(nullptr)), grid, block, s, Args{dst, n, share}, what);
}
} // namespace tenfold::cuda::detail
