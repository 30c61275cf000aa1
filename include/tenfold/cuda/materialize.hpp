#pragma once
// The CUDA backend of plan/walk.hpp: buffers are slots of the program's device arena (laid out by
// plan/arena.hpp, the same walk counted), each nest is a kernel on the given stream. Host-side only:
// it computes device addresses, never touches them.
#include <string>

#include "tenfold/cuda/tensor.hpp"
#include "tenfold/plan/arena.hpp"

namespace tenfold::cuda {

namespace detail {
template <class Dst, class N>
void run(const Dst& dst, const N& n, stream_ref s);
} // namespace detail

struct arena_slots : plan::memory_hooks<device_holder> {
  std::byte* base;
  const index_t* offsets;
  int count;
  stream_ref stream{};
  int next = 0;

  template <class L>
  auto leaf(L&& l) const {
    return std::remove_cvref_t<decltype(kernel_leaf(l))>(kernel_leaf(l));
  }
  template <class T, class S>
  device_leaf<T, S> take() {
    if (next >= count) throw error(tenfold::detail::message("tenfold::cuda: more buffers taken than the arena plan holds (", count, ")"));
    return leaf_at<T, S>(reinterpret_cast<T*>(base + offsets[next++]));
  }
  template <class Dst, class N>
  void run(const Dst& dst, const N& n) {
    detail::run(dst, n, stream);
  }
};
} // namespace tenfold::cuda
