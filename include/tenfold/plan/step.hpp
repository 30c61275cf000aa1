#pragma once
// The plan of a step (core/step.hpp): its statements walked in order, each assignment by the one walk
// (plan/walk.hpp), and every slot and every statement's temporaries given a place in one arena.
//
// The walk over statements is backend-generic, like the walk over an expression: a backend says how
// to run one assignment (`be.assign(dst, expr)`), one group of them as one pass (`be.together(stmt)`)
// and one host statement (`be.host(stmt)`). The
// planner's backend counts (the arena planner's, plus slots): a slot is a buffer alive from the step
// of the first statement that writes it to the last step that reads it; temporaries are numbered as
// they are taken, slots after them, so a backend that runs the step takes temporaries in the same
// order and finds each slot at `offsets[temporaries + slot_index<Tag>]`. Reading a slot before any
// statement writes it is a compile error.
//
// Kept slots (slot<T, S, kept<Tag>>: a step's results, its gradients) do not share: they lie at the
// front of the arena, one after another in the order the statements finish them (the statement that last
// writes each), and stay there after the step. Cut into buckets of at least a given size, each bucket is
// one contiguous run finished at a known statement: run_step hands it to the caller right after that
// statement (an allreduce started while the rest of the backward pass runs).
#include <span>
#include <string_view>

#include "tenfold/core/error.hpp"
#include "tenfold/core/step.hpp"
#include "tenfold/core/tensor_map.hpp"
#include "tenfold/plan/arena.hpp"

namespace tenfold::plan {

inline constexpr int max_slots = 256;

// A slot's identity at compile time: its tag's name, as the compiler spells it in this function's name
// (not an address: GCC 12 does not fold comparisons of two variables' addresses under UBSan). Two
// tags of one step must differ in name, as two local structs of the same name in two lambdas of one
// function would not.
template <class Tag>
constexpr std::string_view slot_key() {
  return __PRETTY_FUNCTION__;
}
template <class R>
struct slot_tag;
template <class T, class S, class Tag>
struct slot_tag<detail::slot_ref<T, S, Tag>> {
  using type = Tag;
};
template <class Tag>
inline constexpr bool is_kept_tag_v = false;
template <class Tag>
inline constexpr bool is_kept_tag_v<kept<Tag>> = true;

// Statements finished so far, for a backend that counts them (the kept slots' buckets).
template <class B>
constexpr void finished_statement(B& be) {
  if constexpr (requires { be.statement_done(); }) be.statement_done();
}

// Statements in order; nested groups in place.
template <class B, class N>
constexpr void run_statements(N&& n, B& be) {
  using D = std::remove_cvref_t<N>;
  if constexpr (detail::is_statements_v<D>)
    detail::unpack([&be](auto&&... s) { (run_statements(std::forward<decltype(s)>(s), be), ...); }, std::forward<N>(n).args);
  else {
    if constexpr (detail::is_assign_stmt_v<D>)
      be.assign(detail::get<0>(std::forward<N>(n).args), detail::get<1>(std::forward<N>(n).args));
    else if constexpr (detail::is_together_v<D>) be.together(std::forward<N>(n));
    else be.host(std::forward<N>(n));
    finished_statement(be);
  }
}

// The counting backend over a step: the arena planner's, with slots (buffer numbers -2, -3, ...).
struct step_counting_backend : counting_backend {
  std::string_view key[max_slots]{};
  buffer_record slot[max_slots]{};
  bool written[max_slots]{};
  int slots = 0;
  // kept slots: which are, their bytes unpadded, their element type's name; every slot's last writer
  bool kept[max_slots]{};
  index_t exact[max_slots]{};
  std::string_view type[max_slots]{};
  int done[max_slots]{};
  int statement = 0; // the statement being walked (leaf statements, in order)

  constexpr void statement_done() { ++statement; }

  template <class R>
  constexpr int slot_number() {
    const std::string_view k = slot_key<typename slot_tag<R>::type>();
    for (int j = 0; j < slots; ++j)
      if (key[j] == k) return j;
    if (slots >= max_slots) throw "tenfold: more than 256 slots in a step";
    key[slots] = k;
    [&]<class T, class S, class Tag>(detail::slot_ref<T, S, Tag>*) {
      slot[slots].bytes = padded_bytes<T, S>();
      kept[slots] = is_kept_tag_v<Tag>, exact[slots] = S::size * index_t(sizeof(T)), type[slots] = slot_key<T>();
    }(static_cast<R*>(nullptr));
    return slots++;
  }
  template <class L>
  constexpr auto leaf(const L& l) {
    using R = detail::slot_read_t<L>;
    if constexpr (std::is_void_v<R>) return counting_backend::leaf(l);
    else {
      using T = typename L::element_type;
      return detail::leaf<T, typename L::shape_type, L::strides, L::offset, counted_holder<T>>{{}, {-2 - slot_number<R>()}};
    }
  }
  constexpr void read(int b, int step) {
    if (b >= 0) {
      if (a.buf[b].last < step) a.buf[b].last = step;
    } else if (b <= -2) {
      if (!written[-2 - b]) throw "tenfold::statements: a slot is read before any statement writes it";
      if (slot[-2 - b].last < step) slot[-2 - b].last = step;
    }
  }
  constexpr void write(int b, int step) {
    if (b >= 0) a.buf[b].first = a.buf[b].last = step;
    else if (b <= -2) {
      const int j = -2 - b;
      if (!written[j]) written[j] = true, slot[j].first = step;
      if (slot[j].last < step) slot[j].last = step;
      done[j] = statement;
    }
  }
  template <class N>
  constexpr void record_reads(const N& n, int step) {
    if constexpr (is_counted_leaf_v<N>) read(n.holder.buffer, step);
    else detail::unpack([&](const auto&... c) { (record_reads(c, step), ...); }, detail::children(n));
  }
  template <class Dst, class N>
  constexpr void run(const Dst& dst, const N& n) {
    const int step = a.steps++;
    ++a.nests;
    record_reads(n, step); // before the write: a statement may read the slot it rewrites
    write(dst.holder.buffer, step);
  }
  template <class Dst, class E>
  constexpr void assign(const Dst& dst, E&& e) {
    auto a = peel_reshape(leaf(dst), std::forward<E>(e)); // as the evaluator does
    run(a.dst, prepare_root(std::move(a.root), *this));
  }
  template <class T>
  constexpr void together(const T& t) { // one nest: every read and write at its step
    const int step = a.steps++;
    ++a.nests;
    detail::unpack([&](const auto&... s) {
      auto one = [&](const auto& part) { record_reads(part.root, step), write(part.dst.holder.buffer, step); };
      (one(together_part(s)), ...);
    }, t.args);
  }
  // An assignment of a group as its backend prepares it: a reduction's root reshape peeled (as assign
  // peels it), so that the reduction is not a buffer of its own.
  template <class A>
  constexpr auto together_part(const A& s) {
    if constexpr (detail::is_reduction_tree<std::remove_cvref_t<decltype(detail::get<1>(s.args))>>()) {
      auto p = peel_reshape(leaf(detail::get<0>(s.args)), detail::get<1>(s.args));
      auto v = prepare_root(std::move(p.root), *this);
      return assignment<decltype(p.dst), decltype(v)>{p.dst, std::move(v)};
    } else {
      auto d = leaf(detail::get<0>(s.args));
      auto v = prepare_root(detail::get<1>(s.args), *this);
      return assignment<decltype(d), decltype(v)>{d, std::move(v)};
    }
  }
  template <class H>
  constexpr void host(const H& h) { // its arguments are read and may be written: alive here
    const int step = a.steps++;
    detail::unpack([&](const auto&... x) { (write(leaf(x).holder.buffer, step), ...); }, h.args);
  }
};

// The kept slots at the arena's front, in the order the statements finish them.
struct kept_layout {
  int count = 0;
  int slot[max_slots]{};                                               // slot numbers, in that order
  index_t offset[max_slots]{}, bytes[max_slots]{}, exact[max_slots]{}; // by position: padded, unpadded
  int done[max_slots]{};                                               // the statement that last writes it
  std::string_view type{};                                             // their element type's name (one for all)
  index_t total = 0;                                                   // the region's bytes
};

struct step_analysis {
  arena_analysis a{}; // temporaries, then slots (a kept slot with no bytes: it is not shared)
  int temporaries = 0;
  int slots = 0;
  std::string_view key[max_slots]{};
  kept_layout kept{};
};

// Buckets of kept slots: consecutive in the kept order, each of at least `min_bytes` but the last.
struct bucket_list {
  int count = 0;
  index_t begin[max_slots]{}, end[max_slots]{}; // bytes of the arena: one contiguous run each
  int after[max_slots]{};                       // the statement after which bucket k is complete
};
constexpr bucket_list make_buckets(const kept_layout& k, index_t min_bytes) {
  bucket_list b{};
  for (int i = 0; i < k.count; ++i) {
    if (b.count == 0 || b.end[b.count - 1] - b.begin[b.count - 1] >= min_bytes) b.begin[b.count++] = k.offset[i];
    b.end[b.count - 1] = k.offset[i] + k.bytes[i], b.after[b.count - 1] = k.done[i];
  }
  return b;
}

// A host statement's function, for the compile-time walk (a lambda with captures cannot be made there).
struct no_host_function {};
template <class F, class... A>
struct probe<detail::host_stmt<F, A...>> {
  using type = detail::host_stmt<no_host_function, typename probe<A>::type...>;
};

template <class Root>
constexpr step_analysis analyze_step() {
  step_counting_backend be{};
  run_statements(probe_t<Root>(), be);
  step_analysis s{be.a, be.a.count, be.slots, {}, {}};
  kept_layout& k = s.kept;
  for (int j = 0; j < be.slots; ++j) {
    if (s.a.count >= max_buffers) throw "tenfold: more than 512 buffers and slots in a step";
    s.a.buf[s.a.count] = be.slot[j];
    if (be.kept[j]) {
      s.a.buf[s.a.count].bytes = 0;
      if (k.count > 0 && be.type[j] != k.type)
        throw "tenfold::statements: a step's kept slots must all have one element type";
      k.type = be.type[j];
      int at = k.count++; // in the order of the statements that finish them (ties: first seen first)
      for (; at > 0 && be.done[k.slot[at - 1]] > be.done[j]; --at) k.slot[at] = k.slot[at - 1];
      k.slot[at] = j;
    }
    ++s.a.count;
    s.key[j] = be.key[j];
  }
  for (int i = 0; i < k.count; ++i) {
    const int j = k.slot[i];
    k.offset[i] = k.total, k.bytes[i] = be.slot[j].bytes, k.exact[i] = be.exact[j], k.done[i] = be.done[j];
    k.total += k.bytes[i];
  }
  return s;
}
} // namespace tenfold::plan

namespace tenfold::plan {
// Where a step's buffers lie, for the backend that runs it: not a template on the plan (a backend type
// that named the whole step would put the step's type in the name of every function the walk
// instantiates, and GCC 12 spent minutes and gigabytes on them).
struct step_places {
  const index_t* offsets;     // temporaries, then slots
  int temporaries;
  int slots;
  const std::string_view* keys; // the slots' names
  const kept_layout* kept;      // the kept slots at the arena's front
  index_t slot_offset(std::string_view key) const {
    for (int j = 0; j < slots; ++j)
      if (keys[j] == key) return offsets[temporaries + j];
    throw error(detail::message("tenfold::run_step: a statement reads a slot its plan does not have (", key, ")"));
  }
};
} // namespace tenfold::plan

namespace tenfold {
// step_plan<Statements>: every slot and temporary of a step at its place in one arena, at compile time.
template <class Statements>
struct step_plan {
  static constexpr plan::step_analysis analysis = plan::analyze_step<Statements>();
  static constexpr plan::arena_layout layout = plan::plan_arena(analysis.a); // after the kept slots
  static constexpr int temporaries = analysis.temporaries; // buffers the statements' walks take, in order
  static constexpr int slots = analysis.slots;
  static constexpr int steps = analysis.a.steps; // nests and host statements
  static constexpr index_t kept_bytes = analysis.kept.total;                         // the kept slots, at the front
  static constexpr index_t bytes = kept_bytes + layout.bytes;                        // the arena's size
  static constexpr index_t lower_bound = kept_bytes + plan::lower_bound(analysis.a); // max bytes alive at once
  static constexpr index_t total = kept_bytes + plan::total_bytes(analysis.a);       // every buffer and slot apart
  static constexpr std::array<index_t, plan::max_buffers> offsets = [] {
    std::array<index_t, plan::max_buffers> o = plan::offsets_of(layout);
    for (int b = 0; b < analysis.a.count; ++b) o[std::size_t(b)] += kept_bytes;
    for (int i = 0; i < analysis.kept.count; ++i)
      o[std::size_t(temporaries + analysis.kept.slot[i])] = analysis.kept.offset[i];
    return o;
  }();
  static constexpr plan::step_places places{offsets.data(), temporaries, slots, analysis.key, &analysis.kept};
  // The kept slots cut into buckets of at least MinBytes (the last may be smaller), in the order the
  // statements finish them: bucket k is bytes [begin[k], end[k]) of the arena, complete after statement
  // after[k].
  template <index_t MinBytes>
  static constexpr plan::bucket_list buckets = plan::make_buckets(analysis.kept, MinBytes);
  // Where in the arena the slot tagged Tag lies.
  template <class Tag>
  static constexpr index_t slot_offset() {
    for (int j = 0; j < slots; ++j)
      if (analysis.key[j] == plan::slot_key<Tag>()) return offsets[std::size_t(temporaries + j)];
    throw "tenfold::step_plan: no statement of this step uses this slot";
  }
  // Where in the arena the kept slot of type L lies (bytes; the kept slots are at the front).
  template <class L>
  static constexpr index_t kept_offset() {
    using R = detail::slot_read_t<L>;
    static_assert(!std::is_void_v<R> && plan::is_kept_tag_v<typename plan::slot_tag<R>::type> && L::contiguous,
                  "tenfold::step_plan::kept: the argument must be a kept slot (slot<T, S, kept<Tag>>)");
    return slot_offset<typename plan::slot_tag<R>::type>();
  }
  // A kept slot's value in `arena` after the step (a TensorMap; until the next run over the arena).
  template <class L>
  static auto kept(std::span<std::byte> arena, const L&) {
    constexpr index_t at = kept_offset<L>();
    if (index_t(arena.size()) < bytes)
      throw error(
          detail::message("tenfold::step_plan::kept: the arena has ", arena.size(), " bytes; this step's has ", bytes));
    return TensorMap<typename L::element_type, typename L::shape_type>(
        reinterpret_cast<typename L::element_type*>(arena.data() + at));
  }
};
} // namespace tenfold
