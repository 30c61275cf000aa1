#pragma once
// The adjoint of a view: a gradient scattered back through the view's index map (part of reverse mode,
// autodiff/backward.hpp).
#include <array>
#include <utility>

#include "tenfold/core/let.hpp"
#include "tenfold/core/views_compose.hpp"
#include "tenfold/ops/api.hpp"
#include "tenfold/ops/pooling.hpp"

namespace tenfold::autodiff {

template <class N>
struct no_adjoint_yet {
  static_assert(sizeof(N) == 0, "tenfold::value_and_grad: this node kind has no derivative yet (see autodiff/backward.hpp "
                                "for what is differentiable)");
};

// ---- scattering a gradient back through an index map -----------------------------------------------
// A view reads its source at a linear function of its own index: source axis p at
// off[p] + sum over the view's axes a of coef[p][a] * i[a] (a leaf's strides, a permutation, a broadcast,
// a slice, a reshape's split, the windows of a pool). Its adjoint sends g (the view's gradient, shape G)
// back onto the source (shape To): the view's axes read backwards (a flip: a negative coefficient) are
// flipped in g, which makes their coefficient positive; the view's axes that feed no source axis
// (broadcasts) are summed; the rest are permuted into source order and each source axis's run of feeding
// axes merged into one axis; then zeros are padded where the view did not read. That needs each view axis
// to feed at most one source axis, and each source axis to be fed by a mixed-radix run (coefficients
// c_1 > c_2 > ... = 1 with c_k = c_{k+1} * extent_{k+1}, as (oh, kh) of a pool whose stride is its
// kernel): every source element is then read at most once. A strided slice's axis (the smallest
// coefficient of its run, s > 1) is first dilated in g (stride_plan); overlapping windows are unrolled
// into a sum of such scatters (overlap_plan).
template <int RT, int RG>
struct linear_read {
  std::array<index_t, RT * RG + 1> coef{}; // [p * RG + a]
  std::array<index_t, RT + 1> off{};
};

// A read with its flips taken out: view axis a read backwards (its only nonzero coefficients negative)
// reads the same elements as the flipped axis read forwards, from the other end: off + c * (n - 1) + |c| * i.
template <int RT, int RG>
struct unflipped_read {
  linear_read<RT, RG> read{};
  std::array<bool, RG + 1> flipped{};
};
template <class G, int RT>
constexpr unflipped_read<RT, G::rank> unflip(linear_read<RT, G::rank> r) {
  constexpr int RG = G::rank;
  unflipped_read<RT, RG> u{r, {}};
  for (int a = 0; a < RG; ++a) {
    bool negative = false, positive = false;
    for (int p = 0; p < RT; ++p) {
      const index_t c = r.coef[p * RG + a];
      if (c < 0) negative = true;
      if (c > 0) positive = true;
    }
    if (!negative || positive || G::dims[a] <= 1) continue;
    u.flipped[a] = true;
    for (int p = 0; p < RT; ++p) {
      const index_t c = r.coef[p * RG + a];
      u.read.off[p] += c * (G::dims[a] - 1);
      u.read.coef[p * RG + a] = -c;
    }
  }
  return u;
}

template <class G, class To, class Read>
struct scatter_plan {
  static constexpr int RG = G::rank, RT = To::rank;
  static constexpr unflipped_read<RT, RG> U = unflip<G, RT>(Read::value);
  static constexpr linear_read<RT, RG> R = U.read;
  static constexpr int flip_count = [] {
    int n = 0;
    for (int a = 0; a < RG; ++a) n += U.flipped[a];
    return n;
  }();
  static constexpr auto flips = [] { // the view axes to flip in g
    std::array<int, RG + 1> f{};
    for (int a = 0, n = 0; a < RG; ++a)
      if (U.flipped[a]) f[n++] = a;
    return f;
  }();
  static constexpr index_t c(int p, int a) { return R.coef[p * RG + a]; }
  // The source axis view axis a feeds (-1: none, RT: more than one or a negative coefficient).
  static constexpr int feeds(int a) {
    if (G::dims[a] == 1) return -1;
    int f = -1;
    for (int p = 0; p < RT; ++p) {
      if (c(p, a) == 0) continue;
      if (c(p, a) < 0 || f >= 0) return RT;
      f = p;
    }
    return f;
  }
  // View axes feeding p, by decreasing coefficient.
  static constexpr std::array<int, RG + 1> run(int p) {
    std::array<int, RG + 1> r{};
    int n = 0;
    for (int a = 0; a < RG; ++a)
      if (feeds(a) == p) r[n++] = a;
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j)
        if (c(p, r[j]) > c(p, r[i])) std::swap(r[i], r[j]);
    r[RG] = n;
    return r;
  }
  static constexpr index_t span(int p) {
    const auto r = run(p);
    return r[RG] == 0 ? 1 : c(p, r[0]) * G::dims[r[0]];
  }
  static constexpr bool valid() {
    for (int a = 0; a < RG; ++a)
      if (feeds(a) == RT) return false;
    for (int p = 0; p < RT; ++p) {
      const auto r = run(p);
      for (int i = 0; i < r[RG]; ++i) {
        const index_t next = i + 1 < r[RG] ? c(p, r[i + 1]) * G::dims[r[i + 1]] : 1;
        if (c(p, r[i]) != next) return false;
      }
      if (R.off[p] < 0 || R.off[p] + span(p) > To::dims[p]) return false;
    }
    return true;
  }
  static constexpr int summed_count = [] {
    int n = 0;
    for (int a = 0; a < RG; ++a) n += feeds(a) == -1 && G::dims[a] > 1;
    return n;
  }();
  static constexpr auto summed = [] {
    std::array<int, RG + 1> s{};
    for (int a = 0, n = 0; a < RG; ++a)
      if (feeds(a) == -1 && G::dims[a] > 1) s[n++] = a;
    return s;
  }();
  static constexpr int kept = [] {
    int n = 0;
    for (int a = 0; a < RG; ++a) n += feeds(a) >= 0;
    return n;
  }();
  static constexpr auto kept_dims = [] { // the feeding axes in g's order
    std::array<index_t, RG + 1> d{};
    for (int a = 0, n = 0; a < RG; ++a)
      if (feeds(a) >= 0) d[n++] = G::dims[a];
    return d;
  }();
  static constexpr auto perm = [] { // permute<perm...> of the kept axes into source order, runs by coefficient
    std::array<int, RG + 1> rank_of{}, out{};
    for (int a = 0, n = 0; a < RG; ++a)
      if (feeds(a) >= 0) rank_of[a] = n++;
    for (int p = 0, n = 0; p < RT; ++p) {
      const auto r = run(p);
      for (int i = 0; i < r[RG]; ++i) out[n++] = rank_of[r[i]];
    }
    return out;
  }();
  static constexpr bool merges = [] {
    for (int p = 0; p < RT; ++p)
      if (run(p)[RG] > 1) return true;
    return false;
  }();
  static constexpr bool identity_perm = [] {
    for (int i = 0; i < kept; ++i)
      if (perm[i] != i) return false;
    return true;
  }();
  static constexpr auto spans = [] {
    std::array<index_t, RT + 1> d{};
    for (int p = 0; p < RT; ++p) d[p] = span(p);
    return d;
  }();
  static constexpr detail::dims_t<RT> span_dims() {
    detail::dims_t<RT> d{};
    for (int p = 0; p < RT; ++p) d[p] = span(p);
    return d;
  }
  static constexpr auto pads = [] {
    std::array<index_t, 2 * RT + 1> d{};
    for (int p = 0; p < RT; ++p) d[2 * p] = R.off[p], d[2 * p + 1] = To::dims[p] - R.off[p] - span(p);
    return d;
  }();
  static constexpr bool padded = [] {
    for (int i = 0; i < 2 * RT; ++i)
      if (pads[i] != 0) return true;
    return false;
  }();
};

template <class To, class X>
auto reshape_to(X&& x) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) { return reshape<To::dims[I]...>(std::forward<X>(x)); }(
      std::make_index_sequence<To::rank>{});
}

// g flipped on the plan's flipped axes; summed over its broadcast ones.
template <class P, std::size_t... I, class X>
auto flip_axes(X&& g, std::index_sequence<I...>) {
  return flip<P::flips[I]...>(std::forward<X>(g));
}
template <class P, std::size_t... I, class X>
auto sum_axes(X&& g, std::index_sequence<I...>) {
  return tenfold::sum(std::forward<X>(g), axes<P::summed[I]...>, keepdims);
}

// A view axis that feeds its source axis with a stride s > 1 (a strided slice: the smallest coefficient
// of its run) reads every s-th element: its gradient is g dilated along that axis (s - 1 zeros between
// neighbours), which the axis then reads with coefficient ±1. Alone in its run, the axis becomes
// (m - 1) s + 1 long (it then fits the source whatever the slice's end); under a coarser axis (a
// reshape's split), m s long, so that the coarser coefficient is still the merged extent. One such axis
// at a time (scatter_linear recurses).
template <class G, class To, class Read>
struct stride_plan {
  using P = scatter_plan<G, To, Read>;
  static constexpr int RG = G::rank, RT = To::rank;
  static constexpr std::array<int, 2> found = [] { // {view axis, source axis}, or -1s
    for (int p = 0; p < RT; ++p) {
      const auto r = P::run(p);
      if (r[RG] > 0 && P::c(p, r[r[RG] - 1]) > 1) return std::array<int, 2>{r[r[RG] - 1], p};
    }
    return std::array<int, 2>{-1, -1};
  }();
  static constexpr int axis = found[0], source = found[1];
  static constexpr index_t step = axis < 0 ? 1 : P::c(source, axis), m = axis < 0 ? 1 : G::dims[axis];
  static constexpr index_t extent = axis < 0 ? 1 : P::run(source)[RG] == 1 ? (m - 1) * step + 1 : m * step;
  struct dilated_read {
    static constexpr linear_read<RT, RG> value = [] {
      auto r = Read::value;
      index_t& c = r.coef[source * RG + axis];
      c = c > 0 ? 1 : -1;
      return r;
    }();
  };
};
// g with Step - 1 zeros after each element along Axis, cut to Extent ((m - 1) Step + 1 or m Step).
template <int Axis, index_t Step, index_t Extent, class X>
auto dilate(X&& g) {
  using G = detail::shape_of_t<X>;
  constexpr int R = G::rank;
  constexpr index_t m = G::dims[Axis];
  auto spread = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return pad<(int(I) == 2 * (Axis + 1) + 1 ? Step - 1 : 0)...>(unsqueeze<Axis + 1>(std::forward<X>(g)));
  }(std::make_index_sequence<std::size_t(2 * (R + 1))>{});
  auto merged = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return reshape<(int(I) == Axis ? m * Step : G::dims[I])...>(std::move(spread));
  }(std::make_index_sequence<std::size_t(R)>{});
  if constexpr (Extent == m * Step) return merged;
  else
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return slice<std::conditional_t<int(I) == Axis, range<0, Extent>, whole>...>(std::move(merged));
    }(std::make_index_sequence<std::size_t(R)>{});
}

// Overlapping windows (a pool whose stride is below its kernel, or dilated): a source axis fed by a run
// that is not mixed-radix even after the dilation above, so some source elements are read more than once.
// The run's shortest view axis is unrolled: g's slices along it are scattered each on its own (that
// axis then reads nothing, the slice's index moved into the offset) and added. A k x k pool becomes k^2
// strided scatters of g bound once: each reads its own elements of g, so no element is read twice.
template <class G, class To, class Read>
struct overlap_plan {
  using P = scatter_plan<G, To, Read>;
  static constexpr int RG = G::rank, RT = To::rank;
  static constexpr int axis = [] {
    for (int p = 0; p < RT; ++p) {
      const auto r = P::run(p);
      bool mixed_radix = true;
      for (int i = 0; i + 1 < r[RG]; ++i) mixed_radix &= P::c(p, r[i]) == P::c(p, r[i + 1]) * G::dims[r[i + 1]];
      if (mixed_radix) continue;
      int shortest = r[0];
      for (int i = 1; i < r[RG]; ++i)
        if (G::dims[r[i]] < G::dims[shortest]) shortest = r[i];
      return shortest;
    }
    return -1;
  }();
  template <index_t K>
  struct slice_read {
    static constexpr linear_read<RT, RG> value = [] {
      auto r = Read::value;
      for (int p = 0; p < RT; ++p) r.off[p] += r.coef[p * RG + axis] * K, r.coef[p * RG + axis] = 0;
      return r;
    }();
  };
};

// f(x) for an x read more than once: x itself where it is memory already (a leaf), else x bound once by
// a let.
template <class X, class F>
auto read_once(const X& x, F&& f) {
  if constexpr (detail::is_leaf_v<X>) return std::forward<F>(f)(x);
  else return let(x, std::forward<F>(f));
}

template <class To, class Read, class X>
auto scatter_linear_unit(X&& g);
template <class To, class Read, class X>
auto scatter_linear(X&& g) {
  using G = detail::shape_of_t<X>;
  using P = scatter_plan<G, To, Read>;
  using SP = stride_plan<G, To, Read>;
  using OP = overlap_plan<G, To, Read>;
  if constexpr (!P::valid() && SP::axis >= 0)
    return scatter_linear<To, typename SP::dilated_read>(dilate<SP::axis, SP::step, SP::extent>(std::forward<X>(g)));
  else if constexpr (!P::valid() && OP::axis >= 0)
    return read_once(detail::as_node(std::forward<X>(g)), [](const auto& gb) {
      return [&]<index_t... K>(std::integer_sequence<index_t, K...>) {
        const auto part = [&]<index_t k>(std::integral_constant<index_t, k>) {
          auto at_k = [&]<std::size_t... I>(std::index_sequence<I...>) {
            return slice<std::conditional_t<int(I) == OP::axis, range<k, k + 1>, whole>...>(gb);
          }(std::make_index_sequence<std::size_t(G::rank)>{});
          return scatter_linear<To, typename OP::template slice_read<k>>(std::move(at_k));
        };
        return (part(std::integral_constant<index_t, K>{}) + ...);
      }(std::make_integer_sequence<index_t, G::dims[OP::axis]>{});
    });
  else return scatter_linear_unit<To, Read>(std::forward<X>(g));
}

template <class To, class Read, class X>
auto scatter_linear_unit(X&& g) {
  using G = detail::shape_of_t<X>;
  using P = scatter_plan<G, To, Read>;
  static_assert(P::valid(), "tenfold::value_and_grad: this view has no adjoint yet (a view axis feeding two source "
                            "axes, as a diagonal does; see autodiff/view_adjoint.hpp)");
  auto unflipped = [&] {
    if constexpr (P::flip_count == 0) return detail::as_node(std::forward<X>(g));
    else return flip_axes<P>(std::forward<X>(g), std::make_index_sequence<std::size_t(P::flip_count)>{});
  }();
  auto reduced = [&] {
    if constexpr (P::summed_count == 0) return std::move(unflipped);
    else return sum_axes<P>(std::move(unflipped), std::make_index_sequence<std::size_t(P::summed_count)>{});
  }();
  auto merged = [&] {
    using Spans = shape_from<P::span_dims()>;
    if constexpr (P::identity_perm) return reshape_to<Spans>(std::move(reduced));
    else {
      auto permuted = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return permute<P::perm[I]...>(reshape<P::kept_dims[I]...>(std::move(reduced)));
      }(std::make_index_sequence<std::size_t(P::kept)>{});
      // Runs merged across a permutation (the windows of a pool): the permuted g is computed into a
      // buffer in the target's order (the permutation folds into the strides of the leaves it reads),
      // so that merging the runs is a reshape of memory, not an index map evaluated element by element.
      if constexpr (P::merges) return let(std::move(permuted), [](const auto& v) { return reshape_to<Spans>(v); });
      else return reshape_to<Spans>(std::move(permuted));
    }
  }();
  if constexpr (!P::padded) return merged;
  else
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return pad<P::pads[I]...>(std::move(merged), 0); }(
        std::make_index_sequence<std::size_t(2 * To::rank)>{});
}

// A leaf reading the target (its views folded into the strides) back onto the target's shape: each
// stride is split over the target's row-major strides, outermost first.
template <class To, class L>
constexpr linear_read<To::rank, L::rank> leaf_read() {
  using G = typename L::shape_type;
  constexpr auto cs = strides_of<To>;
  linear_read<To::rank, G::rank> r{};
  for (int a = 0; a < G::rank; ++a) {
    const index_t s = L::strides[a], m = s < 0 ? -s : s; // s < 0: a flip
    if (s == 0 || G::dims[a] == 1) continue;
    for (int p = 0; p < To::rank; ++p)
      if (To::dims[p] > 1 && cs[p] <= m && m % cs[p] == 0) {
        r.coef[p * G::rank + a] = s / cs[p];
        break;
      }
  }
  index_t rem = L::offset;
  for (int p = 0; p < To::rank; ++p)
    if (To::dims[p] > 1) r.off[p] = rem / cs[p], rem %= cs[p];
  return r;
}
// (The reads reach scatter_plan as types holding the value: GCC 12 confused two class-type template
// arguments of the same type and different values.)
template <class To, class L>
struct leaf_read_of {
  static constexpr auto value = leaf_read<To, L>();
};
template <class To, class L, class X>
auto leaf_adjoint(X&& g) {
  using G = typename L::shape_type;
  if constexpr (L::offset == 0 && G::size == To::size && L::strides == detail::canon(strides_of<G>))
    return reshape_to<To>(std::forward<X>(g)); // a reshape of the target (a flatten merges axes)
  else return scatter_linear<To, leaf_read_of<To, L>>(std::forward<X>(g));
}

// A view of a node: the adjoint of its index map.
template <class M>
constexpr linear_read<M::in_shape::rank, M::out_shape::rank> map_read() {
  using In = typename M::in_shape;
  using Out = typename M::out_shape;
  linear_read<In::rank, Out::rank> r{};
  if constexpr (requires { M::src; M::scale; }) {
    for (int j = 0; j < In::rank; ++j)
      if (M::src[j] >= 0) r.coef[j * Out::rank + M::src[j]] = M::scale[j];
  } else {
    for (int i = 0; i < In::rank * Out::rank; ++i) r.coef[i] = M::coef[i];
  }
  for (int j = 0; j < In::rank; ++j) r.off[j] = M::off[j];
  return r;
}
template <class M>
struct map_read_of {
  static constexpr auto value = map_read<M>();
};

// tile and repeat read their source at an index modulo or divided by its extent (not linear): every
// source element is read once per copy, so its gradient is g summed over the copies. tile's g
// [lead..., r_0 n_0, r_1 n_1, ...] is split into [lead..., r_0, n_0, r_1, n_1, ...] and summed over the
// leading and the r axes; repeat's axis n K into [n, K], summed over K.
template <class M>
inline constexpr bool is_tile_map_v = false;
template <class In, class Out>
inline constexpr bool is_tile_map_v<detail::tile_map<In, Out>> = true;
template <class M>
inline constexpr bool is_repeat_map_v = false;
template <class In, int Axis, index_t K>
inline constexpr bool is_repeat_map_v<detail::repeat_map<In, Axis, K>> = true;
template <class In, int Axis, index_t K>
constexpr int repeat_axis(detail::repeat_map<In, Axis, K>*) {
  return Axis;
}

template <class M, class X>
auto copies_adjoint(X&& g) {
  using In = typename M::in_shape;
  using Out = typename M::out_shape;
  constexpr int RI = In::rank;
  if constexpr (is_tile_map_v<M>) {
    constexpr int L = Out::rank - RI, R = L + 2 * RI, C = L + RI;
    constexpr auto split = [] {
      std::array<index_t, R + 1> d{};
      for (int i = 0; i < L; ++i) d[i] = Out::dims[i];
      for (int j = 0; j < RI; ++j) {
        const index_t n = In::dims[j], m = Out::dims[L + j];
        d[L + 2 * j] = n > 1 ? m / n : m, d[L + 2 * j + 1] = n > 1 ? n : 1;
      }
      return d;
    }();
    constexpr auto copies = [] {
      std::array<int, C + 1> a{};
      for (int i = 0; i < L; ++i) a[i] = i;
      for (int j = 0; j < RI; ++j) a[L + j] = L + 2 * j;
      return a;
    }();
    return [&]<std::size_t... I, std::size_t... J>(std::index_sequence<I...>, std::index_sequence<J...>) {
      return reshape_to<In>(tenfold::sum(reshape<split[I]...>(std::forward<X>(g)), axes<copies[J]...>));
    }(std::make_index_sequence<std::size_t(R)>{}, std::make_index_sequence<std::size_t(C)>{});
  } else {
    constexpr int axis = repeat_axis(static_cast<M*>(nullptr));
    constexpr index_t n = In::dims[axis], k = Out::dims[axis] / (n ? n : 1);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return reshape_to<In>(tenfold::sum(
          reshape<(int(I) < axis ? In::dims[I] : int(I) == axis ? n : int(I) == axis + 1 ? k : In::dims[I - 1])...>(std::forward<X>(g)),
          axes<axis + 1>));
    }(std::make_index_sequence<std::size_t(RI + 1)>{});
  }
}

// adaptive_avg_pool2d's windows (uneven: window o starts at floor(o n / outs)) read x[start(o) + k]. For
// one tap (kh, kw) the starts are increasing, so each x position is read by at most one window: the tap's
// share of g is a gather from x's positions back to the window that read them (the inverse of start),
// masked where none did. The adjoint is the sum over the KH x KW taps of these gathers, g bound once.
// (Reads clamped at the input's edge lie outside their window: their g is 0, masked in the forward.)
TENFOLD_HD constexpr index_t adaptive_window_of(index_t p, index_t n, index_t outs) {
  if (p < 0) return -1;
  const index_t o = (p * outs + n - 1) / n;
  return o < outs && detail::adaptive_start(o, n, outs) == p ? o : -1;
}
template <class M>
inline constexpr bool is_adaptive_window_map_v = false;
template <class In, class Out, class L>
inline constexpr bool is_adaptive_window_map_v<detail::adaptive_window_map<In, Out, L>> = true;
template <class M, index_t KH, index_t KW>
struct adaptive_tap_map { // from x's index to the index of g [.., OH, OW, .., KH, KW] that tap (KH, KW) read
  using in_shape = typename M::out_shape;
  using out_shape = typename M::in_shape;
  static constexpr int h = M::h, R = out_shape::rank;
  TENFOLD_HD static constexpr void map(const index_t* out, index_t* in) {
    for (int j = 0; j < R; ++j) in[j] = out[j];
    const index_t oh = adaptive_window_of(out[h] - KH, out_shape::dims[h], in_shape::dims[h]);
    const index_t ow = adaptive_window_of(out[h + 1] - KW, out_shape::dims[h + 1], in_shape::dims[h + 1]);
    in[h] = oh < 0 ? 0 : oh, in[h + 1] = ow < 0 ? 0 : ow, in[R] = KH, in[R + 1] = KW;
  }
};
struct adaptive_tap_mask {
  static constexpr const char* name = "adaptive_tap_mask";
  int h;
  index_t kh, kw, n_h, n_w, o_h, o_w;
  TENFOLD_HD bool operator()(const index_t* i) const {
    return adaptive_window_of(i[h] - kh, n_h, o_h) >= 0 && adaptive_window_of(i[h + 1] - kw, n_w, o_w) >= 0;
  }
};
template <class M, class X>
auto adaptive_windows_adjoint(X&& g) {
  using In = typename M::in_shape;
  using Out = typename M::out_shape;
  constexpr int h = M::h;
  constexpr index_t KH = Out::dims[In::rank], KW = Out::dims[In::rank + 1];
  return read_once(detail::as_node(std::forward<X>(g)), [](const auto& gb) {
    using T = typename std::remove_cvref_t<decltype(gb)>::value_type;
    const auto tap = [&]<index_t kh, index_t kw>() {
      const adaptive_tap_mask m{h, kh, kw, In::dims[h], In::dims[h + 1], Out::dims[h], Out::dims[h + 1]};
      return where(detail::generator_node<bool, In, adaptive_tap_mask>{{}, m},
                   detail::apply_view<adaptive_tap_map<M, kh, kw>>(gb), compute_t<T>(0));
    };
    return [&]<index_t... K>(std::integer_sequence<index_t, K...>) {
      return (tap.template operator()<K / KW, K % KW>() + ...);
    }(std::make_integer_sequence<index_t, KH * KW>{});
  });
}

template <class M, class X>
auto view_adjoint(X&& g) {
  using In = typename M::in_shape;
  if constexpr (detail::is_reshape_map_v<M>) return reshape_to<In>(std::forward<X>(g));
  else if constexpr (requires { M::src; M::scale; M::off; } || requires { M::coef; M::off; })
    return scatter_linear<In, map_read_of<M>>(std::forward<X>(g));
  else if constexpr (is_tile_map_v<M> || is_repeat_map_v<M>) return copies_adjoint<M>(std::forward<X>(g));
  else if constexpr (is_adaptive_window_map_v<M>) return adaptive_windows_adjoint<M>(std::forward<X>(g));
  else return no_adjoint_yet<M>{};
}

} // namespace tenfold::autodiff
