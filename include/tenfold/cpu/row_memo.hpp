#pragma once
// Reductions that one output row reads more than once, computed once. layer_norm's tail reads
// x - mean(x) and so does its variance, mean(square(x - mean(x))): each is a separate subtree, so
// the row would sweep for mean(x) twice (log_softmax's max likewise). While a row is evaluated
// (a `row_memo_scope` on the stack: the CPU evaluator opens one per output row), the row-constant
// reductions it computes are remembered by their node's type and bytes and the reduced index.
// Equal bytes mean the same operands (nodes are plain aggregates of pointers and numbers; unequal
// padding only costs a recomputation), and nothing is written between two reads inside one scope:
// the row's stores start after all of its reductions are taken. Reductions whose ops run the same
// accumulation (an op that declares `using accumulation = Other;`, as log_softmax's max and log-sum
// halves do) share one entry: the node is keyed as the reduction of that accumulation, and only the
// finalize step, applied by the reader, differs.
#include <array>
#include <cstring>
#include <type_traits>

#include "tenfold/core/config.hpp"
#include "tenfold/core/reduce_node.hpp"

namespace tenfold::cpu {

struct row_memo {
  static constexpr std::size_t key_bytes = 256, value_bytes = 32;
  static constexpr int capacity = 8;
  struct entry {
    const void* type;
    std::size_t size;
    alignas(16) unsigned char key[key_bytes];
    alignas(16) unsigned char value[value_bytes];
  };
  entry entries[capacity];
  int count = 0;
  static row_memo*& current() {
    thread_local row_memo* m = nullptr;
    return m;
  }
};

// Opens a row's memo for this thread until the end of the scope (scopes nest).
class row_memo_scope {
  row_memo memo_;
  row_memo* prev_;

public:
  row_memo_scope() : prev_(row_memo::current()) { row_memo::current() = &memo_; }
  ~row_memo_scope() { row_memo::current() = prev_; }
  row_memo_scope(const row_memo_scope&) = delete;
  row_memo_scope& operator=(const row_memo_scope&) = delete;
};

struct no_memo_scope {};

template <class T>
inline constexpr char memo_type_tag = 0;

template <class N>
struct memo_identity {
  using type = N;
};
template <class Op, class C, auto Mask, bool Keep>
  requires requires { typename Op::accumulation; }
struct memo_identity<detail::reduce_node<Op, C, Mask, Keep>> {
  using type = detail::reduce_node<typename Op::accumulation, C, Mask, Keep>;
  static_assert(sizeof(type) == sizeof(detail::reduce_node<Op, C, Mask, Keep>));
};
template <class N>
using memo_identity_t = typename memo_identity<N>::type;

// compute() for reduction node `n` at reduced index `idx` (R entries), or its remembered value.
template <class N, int R, class F>
auto memo_reduce(const N& n, const index_t* idx, F&& compute) {
  using A = decltype(compute());
  constexpr std::size_t size = sizeof(N) + sizeof(index_t) * R;
  row_memo* m = row_memo::current();
  if constexpr (size <= row_memo::key_bytes && sizeof(A) <= row_memo::value_bytes && std::is_trivially_copyable_v<A> &&
                std::is_trivially_copyable_v<N>) {
    if (m) {
      alignas(16) unsigned char key[size];
      std::memcpy(key, static_cast<const void*>(&n), sizeof(N));
      if constexpr (R > 0) std::memcpy(key + sizeof(N), idx, sizeof(index_t) * R);
      for (int i = 0; i < m->count; ++i) {
        const auto& e = m->entries[i];
        if (e.type == &memo_type_tag<memo_identity_t<N>> && e.size == size && std::memcmp(e.key, key, size) == 0) {
          A a;
          std::memcpy(static_cast<void*>(&a), e.value, sizeof(A));
          return a;
        }
      }
      const A a = compute();
      if (m->count < row_memo::capacity) {
        auto& e = m->entries[m->count++];
        e.type = &memo_type_tag<memo_identity_t<N>>;
        e.size = size;
        std::memcpy(e.key, key, size);
        std::memcpy(e.value, static_cast<const void*>(&a), sizeof(A));
      }
      return a;
    }
  }
  return compute();
}
} // namespace tenfold::cpu
