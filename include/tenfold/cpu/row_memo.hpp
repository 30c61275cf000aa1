#pragma once
// Reductions that one output row reads more than once, computed once. layer_norm's tail reads
// x - mean(x) and so does its variance, mean(square(x - mean(x))): each is a separate subtree, so
// the row would sweep for mean(x) twice (log_softmax's max likewise). plan/same_reductions.hpp decides
// which reductions are of one kind (from the types) and checks once per launch that those of one kind
// hold the same operands; then, while a row is evaluated (a `row_memo_scope` on the stack: the CPU
// evaluator opens one per output row), each kind's result is remembered per reduced index. The
// index is compared at run time: one kind can be read at different indices in one row (a reduction
// nested in another's operand, seen through another view).
#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include "tenfold/core/config.hpp"
#include "tenfold/plan/same_reductions.hpp"

namespace tenfold::cpu {

struct row_memo {
  static constexpr std::size_t value_bytes = 32;
  static constexpr int capacity = 8, max_rank = 8;
  struct entry {
    const void* kind;
    std::array<index_t, max_rank> idx;
    alignas(16) unsigned char value[value_bytes];
  };
  entry entries[capacity];
  int count = 0;
  static row_memo*& current() {
    thread_local row_memo* m = nullptr;
    return m;
  }
};

// Opens a row's memo for this thread until the end of the scope (scopes nest), when `on` (the launch's
// check that reductions of one kind hold the same operands passed).
class row_memo_scope {
  row_memo memo_;
  row_memo* prev_;
  bool on_;

public:
  explicit row_memo_scope(bool on) : prev_(row_memo::current()), on_(on) {
    if (on_) row_memo::current() = &memo_;
  }
  ~row_memo_scope() {
    if (on_) row_memo::current() = prev_;
  }
  row_memo_scope(const row_memo_scope&) = delete;
  row_memo_scope& operator=(const row_memo_scope&) = delete;
};
struct no_memo_scope {
  explicit no_memo_scope(bool) {}
};

template <class T>
inline constexpr char memo_kind_tag = 0;

// compute() for reduction node `n` (of type N) at reduced index `idx` (R entries), or the value
// remembered for its kind at that index in this row.
template <class N, int R, class F>
auto memo_reduce(const N&, const index_t* idx, F&& compute) {
  using A = decltype(compute());
  row_memo* m = row_memo::current();
  if constexpr (R <= row_memo::max_rank && sizeof(A) <= row_memo::value_bytes && std::is_trivially_copyable_v<A>) {
    if (m) {
      const void* kind = &memo_kind_tag<plan::shared_accumulation_t<N>>;
      for (int i = 0; i < m->count; ++i) {
        const auto& e = m->entries[i];
        if (e.kind == kind && std::equal(idx, idx + R, e.idx.begin())) {
          A a;
          std::memcpy(static_cast<void*>(&a), e.value, sizeof(A));
          return a;
        }
      }
      const A a = compute();
      if (m->count < row_memo::capacity) {
        auto& e = m->entries[m->count++];
        e.kind = kind;
        std::copy(idx, idx + R, e.idx.begin());
        std::memcpy(e.value, static_cast<const void*>(&a), sizeof(A));
      }
      return a;
    }
  }
  return compute();
}
} // namespace tenfold::cpu
