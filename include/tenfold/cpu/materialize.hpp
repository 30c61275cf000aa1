#pragma once
// The CPU backend of plan/walk.hpp: buffers are slots of an arena laid out at compile time by
// plan/arena.hpp (the same walk, counted), and each nest runs on the CPU evaluator.
#include <cstddef>
#include <string>

#include "tenfold/core/error.hpp"
#include "tenfold/core/tensor.hpp"
#include "tenfold/plan/arena.hpp"

namespace tenfold::cpu {

template <class Dst, class N>
void run(const Dst& dst, const N& n);

struct arena_buffers : plan::memory_hooks<detail::ref_holder> {
  std::byte* base;
  const index_t* offsets;
  int count;
  int next = 0;
  mutable index_t length = 0; // of the evaluation's bounded axis (upto<N>), which its buffers share
  arena_buffers(std::byte* b, const index_t* o, int n) : base(b), offsets(o), count(n) {}

  template <class T, class S>
  auto take() {
    if (next >= count) throw error(detail::message("tenfold: more buffers taken than the arena plan holds (", count, ")"));
    T* p = reinterpret_cast<T*>(base + offsets[next++]);
    if constexpr (S::has_bounded) return detail::leaf<T, S, detail::canon(strides_of<S>), 0, detail::bounded_ref_holder<T>>{{}, {p, &length}};
    else return detail::leaf<T, S, detail::canon(strides_of<S>), 0, detail::ref_holder<T>>{{}, {p}};
  }
  // A let's value read back: a bounded one with the evaluation's length.
  template <class P>
  auto resolve(plan::binding b) const {
    using T = typename P::element_type;
    if constexpr (P::shape_type::has_bounded)
      return detail::leaf<T, typename P::shape_type, P::strides, P::offset, detail::bounded_ref_holder<T>>{{}, {static_cast<T*>(b.data), &length}};
    else return plan::memory_hooks<detail::ref_holder>::resolve<P>(b);
  }
  template <class Dst, class N>
  void run(const Dst& dst, const N& n) {
    cpu::run(dst, n);
  }
};
} // namespace tenfold::cpu
