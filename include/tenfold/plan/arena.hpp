#pragma once
// The compile-time arena planner. From an expression's type it lists every buffer that must
// materialise (plan/fusion.hpp decides which), in the order the evaluator takes them, with its size and
// its lifetime: from the step its loop nest runs to the step of the nest that reads it (steps are the
// nests in execution order). Offsets are then assigned greedily by size — largest first, each at the
// lowest address where it overlaps no buffer alive at the same time (the rule TFLite's planner uses; an
// online first-fit in execution order is what costs other runtimes up to 2x). Two orderings are tried
// and the smaller arena is kept. Everything is constexpr: `arena_plan<E>::bytes` can size static
// storage or be checked with static_assert against a budget.
#include "tenfold/core/let.hpp"
#include "tenfold/plan/fusion.hpp"

namespace tenfold::plan {

inline constexpr int max_buffers = 128;
inline constexpr int max_reads = 4 * max_buffers;
inline constexpr int max_let_depth = 64;
inline constexpr index_t arena_alignment = 64;

struct buffer_record {
  index_t bytes = 0;
  int own_nest = 0;
  int first = 0, last = 0; // steps
};
struct read_record {
  int buffer = 0, nest = 0;
};

struct arena_analysis {
  buffer_record buf[max_buffers]{};
  int count = 0;
  read_record reads[max_reads]{};
  int read_count = 0;
  int scope[max_let_depth]{}; // the buffer each let in scope binds (-1: its value is read in place)
  int nest_step[max_buffers + 1]{};
  int nests = 0;
  int steps = 0;

  constexpr void read(int b, int nest) {
    if (read_count >= max_reads) throw "tenfold: too many buffer reads for the arena planner";
    reads[read_count++] = {b, nest};
  }
};

// The lets in scope are a pack of tag types, outermost first (types compare exactly at compile time;
// addresses of distinct objects do not, in every build mode). A placeholder reads the innermost let
// with its tag: its depth in the pack indexes arena_analysis::scope.
template <class T, class... Tags>
constexpr int scope_depth() {
  constexpr bool match[] = {std::is_same_v<T, Tags>..., false};
  for (int i = int(sizeof...(Tags)) - 1; i >= 0; --i)
    if (match[i]) return i;
  return -1;
}

// A distinct address per type, for the evaluator's run-time scope (cpu/materialize.hpp).
template <class T>
inline constexpr char tag_id = 0;

template <class N>
constexpr index_t padded_bytes() {
  const index_t b = N::shape_type::size * index_t(sizeof(typename N::value_type));
  return (b + arena_alignment - 1) / arena_alignment * arena_alignment;
}

template <class N, class... Tags> constexpr void visit(arena_analysis& a, int nest);
template <class N, class... Tags> constexpr void visit_root(arena_analysis& a, int nest);

// A new buffer for H (taken before its inputs, as cpu/materialize.hpp does), filled by its own nest.
template <class H, class... Tags>
constexpr int new_buffer(arena_analysis& a) {
  if (a.count >= max_buffers) throw "tenfold: too many materialised buffers for the arena planner";
  const int b = a.count++, k = a.nests++;
  a.buf[b] = {padded_bytes<H>(), k};
  visit_root<H, Tags...>(a, k);
  a.nest_step[k] = a.steps++;
  return b;
}
template <class H, class... Tags>
constexpr void visit_buffer(arena_analysis& a, int nest) {
  a.read(new_buffer<H, Tags...>(a), nest);
}

// Entering a let: its value gets a buffer (unless it is a tensor read in place); its body is then
// visited with the let's tag in scope.
template <class L, class... Tags>
constexpr void bind(arena_analysis& a) {
  using V = typename L::value_node;
  int b = -1;
  if constexpr (!L::in_place) b = new_buffer<V, Tags...>(a);
  else if constexpr (!std::is_void_v<detail::slot_of_t<V>>) b = a.scope[scope_depth<detail::slot_of_t<V>, Tags...>()];
  if (int(sizeof...(Tags)) >= max_let_depth) throw "tenfold: lets nested too deeply for the arena planner";
  a.scope[sizeof...(Tags)] = b;
}

template <class X, class... Tags>
constexpr void visit_operand(arena_analysis& a, int nest) {
  if constexpr (!detail::is_leaf_v<X>) visit_buffer<X, Tags...>(a, nest);
  else visit<X, Tags...>(a, nest);
}

template <class H, class... Tags>
constexpr void visit_prepared(arena_analysis& a, int nest) {
  if constexpr (is_gemm_driven_v<H> || detail::is_leaf_operand_node_v<H>) {
    []<class... C>(arena_analysis& aa, int ne, std::tuple<C...>*) { (visit_operand<C, Tags...>(aa, ne), ...); }(a, nest, static_cast<decltype(H::args)*>(nullptr));
  } else {
    visit<typename H::child_type, Tags...>(a, nest);
  }
}

template <class N, class... Tags>
constexpr void visit(arena_analysis& a, int nest) {
  if constexpr (detail::is_let_node_v<N>) {
    bind<N, Tags...>(a);
    visit<typename N::body_node, Tags..., typename N::tag_type>(a, nest);
  } else if constexpr (detail::is_leaf_v<N>) {
    if constexpr (!std::is_void_v<detail::slot_of_t<N>>) {
      constexpr int d = scope_depth<detail::slot_of_t<N>, Tags...>();
      static_assert(d >= 0, "tenfold: a let placeholder is read outside the body of its let");
      if (a.scope[d] >= 0) a.read(a.scope[d], nest);
    }
  } else if constexpr (materializes_v<N>) {
    if constexpr (is_view_node_v<N>) visit_buffer<view_base_t<N>, Tags...>(a, nest);
    else visit_buffer<N, Tags...>(a, nest);
  } else if constexpr (row_fused_v<N>) {
    visit<typename N::child_type::child_type, Tags...>(a, nest);
  } else if constexpr (direct_fused_v<N>) {
    visit_prepared<N, Tags...>(a, nest);
  } else if constexpr (detail::is_map_node_v<N>) {
    []<class... C>(arena_analysis& aa, int ne, std::tuple<C...>*) { (visit<C, Tags...>(aa, ne), ...); }(a, nest, static_cast<decltype(N::args)*>(nullptr));
  } else if constexpr (is_view_node_v<N> && detail::contains_let<N>()) {
    visit<typename N::child_type, Tags...>(a, nest);
  }
}

template <class N, class... Tags>
constexpr void visit_epilogue(arena_analysis& a, int nest) {
  if constexpr (is_gemm_driven_v<N>) visit_prepared<N, Tags...>(a, nest);
  else if constexpr (detail::is_map_node_v<N> && epilogue_matmuls<N>() == 1)
    []<class... C>(arena_analysis& aa, int ne, std::tuple<C...>*) { (visit_epilogue<C, Tags...>(aa, ne), ...); }(a, nest, static_cast<decltype(N::args)*>(nullptr));
  else visit<N, Tags...>(a, nest);
}

template <class N, class... Tags>
constexpr void visit_root(arena_analysis& a, int nest) {
  if constexpr (detail::is_let_node_v<N>) {
    bind<N, Tags...>(a);
    visit_root<typename N::body_node, Tags..., typename N::tag_type>(a, nest);
  } else if constexpr (gemm_root_v<N>) visit_epilogue<N, Tags...>(a, nest);
  else if constexpr (is_heavy_v<N>) visit_prepared<N, Tags...>(a, nest);
  else visit<N, Tags...>(a, nest);
}

// Roots are assigned in order (a program's statements); lets bound in one are not seen by the next.
template <class... Roots>
constexpr arena_analysis analyze() {
  arena_analysis a{};
  ([&] {
    const int k = a.nests++;
    visit_root<Roots>(a, k);
    a.nest_step[k] = a.steps++;
  }(), ...);
  for (int b = 0; b < a.count; ++b) a.buf[b].first = a.buf[b].last = a.nest_step[a.buf[b].own_nest];
  for (int r = 0; r < a.read_count; ++r) {
    buffer_record& b = a.buf[a.reads[r].buffer];
    const int s = a.nest_step[a.reads[r].nest];
    b.last = b.last > s ? b.last : s;
  }
  return a;
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
} // namespace tenfold::plan

namespace tenfold {
// arena_plan<Expr>: the buffers assigning Expr needs, laid out in one arena at compile time.
template <class... E>
struct arena_plan {
  static constexpr plan::arena_analysis analysis = plan::analyze<detail::node_t<E>...>();
  static constexpr plan::arena_layout layout = plan::plan_arena(analysis);
  static constexpr int buffers = analysis.count;
  static constexpr index_t bytes = layout.bytes;                     // the arena's size
  static constexpr index_t lower_bound = plan::lower_bound(analysis); // max bytes alive at once
  static constexpr index_t total = [] {                              // every buffer apart, for comparison
    index_t t = 0;
    for (int b = 0; b < analysis.count; ++b) t += analysis.buf[b].bytes;
    return t;
  }();
  static constexpr std::array<index_t, plan::max_buffers> offsets = [] {
    std::array<index_t, plan::max_buffers> o{};
    for (int b = 0; b < plan::max_buffers; ++b) o[b] = layout.offset[b];
    return o;
  }();
};
template <class... E>
inline constexpr index_t arena_bytes = arena_plan<E...>::bytes;

// plan_of<Expr>: how many loop nests and materialised buffers assigning Expr to a tensor takes.
template <class E>
struct plan_of {
  static constexpr int nests = arena_plan<E>::analysis.nests;
  static constexpr int buffers = arena_plan<E>::buffers;
};
} // namespace tenfold
