#pragma once
// The compile-time arena planner. It is plan/walk.hpp's walk — the one the evaluators run — run at
// compile time over a backend that counts: each buffer the walk takes gets a number, its size, and
// a lifetime from the step its nest runs to the last step of a nest that reads it (steps are the
// nests in execution order). So the planner and the evaluators take buffers in one order by
// construction. Offsets are then assigned greedily by size — largest first, each at the lowest
// address where it overlaps no buffer alive at the same time (the rule TFLite's planner uses; an
// online first-fit in execution order is what costs other runtimes up to 2x). Two orderings are tried
// and the smaller arena is kept. Everything is constexpr: `arena_plan<E>::bytes` can size static
// storage or be checked with static_assert against a budget.
#include "tenfold/plan/walk.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold::plan {

inline constexpr int max_buffers = 512;
inline constexpr index_t arena_alignment = 64;

struct buffer_record {
  index_t bytes = 0;
  int first = 0, last = 0; // steps: the nest that fills it, the last nest that reads it
};

struct arena_analysis {
  buffer_record buf[max_buffers]{};
  int count = 0;
  int nests = 0;
  int steps = 0;
};

template <class T, class S>
constexpr index_t padded_bytes() {
  const index_t b = S::size * index_t(sizeof(T));
  return (b + arena_alignment - 1) / arena_alignment * arena_alignment;
}

// The storage of a leaf in the counting walk: which planned buffer it is (-1: not one).
template <class T>
struct counted_holder {
  int buffer = -1;
  constexpr T* data() const { return nullptr; }
};
template <class N>
inline constexpr bool is_counted_leaf_v = false;
template <class T, class S, auto St, index_t O, class U>
inline constexpr bool is_counted_leaf_v<detail::leaf<T, S, St, O, counted_holder<U>>> = true;

// The walk's backend at compile time: it numbers buffers as they are taken, gives each nest the next
// step, and extends the life of every buffer a nest reads to that step.
struct counting_backend : walk_state {
  arena_analysis a{};

  template <class T, class S>
  constexpr auto take() {
    if (a.count >= max_buffers) throw "tenfold: more than 512 materialised buffers for the arena planner";
    a.buf[a.count].bytes = padded_bytes<T, S>();
    return detail::leaf<T, S, detail::canon(strides_of<S>), 0, counted_holder<T>>{{}, {a.count++}};
  }
  template <class N>
  constexpr void record_reads(const N& n, int step) {
    if constexpr (is_counted_leaf_v<N>) {
      if (n.holder.buffer >= 0 && a.buf[n.holder.buffer].last < step) a.buf[n.holder.buffer].last = step;
    } else {
      detail::unpack([&](const auto&... c) { (record_reads(c, step), ...); }, detail::children(n));
    }
  }
  template <class Dst, class N>
  constexpr void run(const Dst& dst, const N& n) {
    const int step = a.steps++;
    ++a.nests;
    if (dst.holder.buffer >= 0) a.buf[dst.holder.buffer].first = a.buf[dst.holder.buffer].last = step;
    record_reads(n, step);
  }
  // A leaf of the expression is no buffer; a fresh one (GCC 12 fails on copying the probe's in constexpr).
  template <class L>
  constexpr auto leaf(const L&) const {
    using T = typename L::element_type;
    return detail::leaf<T, typename L::shape_type, L::strides, L::offset, counted_holder<T>>{};
  }
  template <class L>
  constexpr binding bound(const L& value) const {
    if constexpr (is_counted_leaf_v<L>) return {value.holder.buffer, nullptr};
    else return {};
  }
  template <class P>
  constexpr auto resolve(binding b) const {
    using T = typename P::element_type;
    return detail::leaf<T, typename P::shape_type, P::strides, P::offset, counted_holder<T>>{{}, {b.buffer}};
  }
};

// A value of an expression's type to walk at compile time: the same tree with every leaf's storage
// a counted_holder (temporaries the expression owns cannot be made at compile time; a probe owns
// nothing but says it does, so that a let still gives such a value a buffer).
template <class T>
struct probe_owned_holder {
  int buffer = -1;
  constexpr T* data() const { return nullptr; }
};
} // namespace tenfold::plan

namespace tenfold::detail {
template <class T>
inline constexpr bool owns_storage_v<plan::probe_owned_holder<T>> = true;
}

namespace tenfold::plan {
template <class N>
struct probe {
  using type = decltype(std::declval<const N&>().with_children(
      std::declval<typename probe<detail::children_t<N>>::type>()));
};
template <class... C>
struct probe<detail::tuple<C...>> {
  using type = detail::tuple<typename probe<C>::type...>;
};
template <class T, class S, auto St, index_t O, class H>
struct probe<detail::leaf<T, S, St, O, H>> {
  using type = std::conditional_t<detail::owns_storage_v<H>, detail::leaf<T, S, St, O, probe_owned_holder<T>>,
                                  detail::leaf<T, S, St, O, H>>;
};
template <class T, class S>
struct probe<detail::scalar_node<T, S>> {
  using type = detail::scalar_node<T, S>;
};
template <class T, class S, class G>
struct probe<detail::generator_node<T, S, G>> {
  using type = detail::generator_node<T, S, G>;
};
template <class N>
using probe_t = typename probe<N>::type;

// One root walked by the counting backend, into a destination that is no buffer: laid out as `Dst` is
// (void: row-major, a Tensor), which decides whether the root's reshape is peeled (plan/walk.hpp). (Several
// roots in order, with values between them, are a step: plan/step.hpp.)
template <class Root, class Dst>
constexpr void count_root(counting_backend& be) {
  using R = probe_t<Root>;
  using T = typename R::value_type;
  using S = typename R::shape_type;
  constexpr auto strides = [] {
    if constexpr (std::is_void_v<Dst>) return detail::canon(strides_of<S>);
    else return Dst::strides;
  }();
  constexpr index_t offset = [] {
    if constexpr (std::is_void_v<Dst>) return index_t(0);
    else return Dst::offset;
  }();
  // R(), not R{}: GCC 12 fails (an internal error) reading nested members of an empty-based aggregate
  // that was list-initialised in a constant expression.
  auto a = peel_reshape(detail::leaf<T, S, strides, offset, counted_holder<T>>(), R()); // as the evaluator does
  be.run(a.dst, prepare_root(std::move(a.root), be));
}

template <class Root, class Dst = void>
constexpr arena_analysis analyze() {
  counting_backend be{};
  count_root<Root, Dst>(be);
  return be.a;
}

struct arena_layout {
  index_t offset[max_buffers]{};
  index_t bytes = 0;
};

constexpr bool alive_together(const buffer_record& x, const buffer_record& y) { return x.first <= y.last && y.first <= x.last; }

// Place buffers in `order`: each at the lowest offset clear of every placed buffer alive with it.
constexpr arena_layout place(const arena_analysis& a, const int* order) {
  arena_layout l{};
  bool placed[max_buffers]{};
  for (int n = 0; n < a.count; ++n) {
    const int b = order[n];
    index_t best = 0;
    for (bool moved = true; moved;) { // slide up past every conflict until none is left
      moved = false;
      for (int o = 0; o < a.count; ++o)
        if (placed[o] && alive_together(a.buf[b], a.buf[o]) && best < l.offset[o] + a.buf[o].bytes &&
            l.offset[o] < best + a.buf[b].bytes) {
          best = l.offset[o] + a.buf[o].bytes;
          moved = true;
        }
    }
    l.offset[b] = best;
    placed[b] = true;
    l.bytes = l.bytes > best + a.buf[b].bytes ? l.bytes : best + a.buf[b].bytes;
  }
  return l;
}

template <class Less>
constexpr void sort_order(int* order, int n, Less less) {
  for (int i = 0; i < n; ++i) order[i] = i;
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && less(order[j], order[j - 1]); --j) {
      const int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
}

constexpr arena_layout plan_arena(const arena_analysis& a) {
  int by_size[max_buffers]{}, by_lifetime[max_buffers]{};
  sort_order(by_size, a.count, [&](int x, int y) {
    return a.buf[x].bytes != a.buf[y].bytes ? a.buf[x].bytes > a.buf[y].bytes : a.buf[x].first < a.buf[y].first;
  });
  sort_order(by_lifetime, a.count, [&](int x, int y) {
    const int lx = a.buf[x].last - a.buf[x].first, ly = a.buf[y].last - a.buf[y].first;
    return lx != ly ? lx > ly : a.buf[x].bytes > a.buf[y].bytes;
  });
  const arena_layout s = place(a, by_size), t = place(a, by_lifetime);
  return s.bytes <= t.bytes ? s : t;
}

// Max over steps of the bytes alive at once: no layout can be smaller.
constexpr index_t lower_bound(const arena_analysis& a) {
  index_t best = 0;
  for (int s = 0; s < a.steps; ++s) {
    index_t live = 0;
    for (int b = 0; b < a.count; ++b)
      if (a.buf[b].first <= s && s <= a.buf[b].last) live += a.buf[b].bytes;
    best = best > live ? best : live;
  }
  return best;
}
// Every buffer apart: what the arena would be without sharing, for comparison.
constexpr index_t total_bytes(const arena_analysis& a) {
  index_t t = 0;
  for (int b = 0; b < a.count; ++b) t += a.buf[b].bytes;
  return t;
}
constexpr std::array<index_t, max_buffers> offsets_of(const arena_layout& l) {
  std::array<index_t, max_buffers> o{};
  for (int b = 0; b < max_buffers; ++b) o[std::size_t(b)] = l.offset[b];
  return o;
}
} // namespace tenfold::plan

namespace tenfold {
// arena_plan<Expr>: the buffers assigning Expr needs, laid out in one arena at compile time; to a
// Tensor, or to a destination laid out as the leaf Dst (a strided view of one: its layout decides
// whether a reshape at the root needs a buffer, plan/walk.hpp's peel_reshape).
template <class E, class Dst = void>
struct arena_plan {
  static constexpr plan::arena_analysis analysis = plan::analyze<detail::node_t<E>, Dst>();
  static constexpr plan::arena_layout layout = plan::plan_arena(analysis);
  static constexpr int buffers = analysis.count;
  static constexpr index_t bytes = layout.bytes;                     // the arena's size
  static constexpr index_t lower_bound = plan::lower_bound(analysis); // max bytes alive at once
  static constexpr index_t total = plan::total_bytes(analysis);       // every buffer apart, for comparison
  static constexpr std::array<index_t, plan::max_buffers> offsets = plan::offsets_of(layout);
};
template <class E>
inline constexpr index_t arena_bytes = arena_plan<E>::bytes;

// plan_of<Expr>: how many loop nests and materialised buffers assigning Expr to a tensor takes.
template <class E>
struct plan_of {
  static constexpr int nests = arena_plan<E>::analysis.nests;
  static constexpr int buffers = arena_plan<E>::buffers;
};
} // namespace tenfold
