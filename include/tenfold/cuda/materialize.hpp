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

struct arena_slots : plan::walk_state {
  std::byte* base;
  const index_t* offsets;
  int count;
  stream_ref stream{};
  int next = 0;

  template <class T, class S>
  device_leaf<T, S> take() {
    if (next >= count) throw error(tenfold::detail::message("tenfold::cuda: more buffers taken than the arena plan holds (", count, ")"));
    return leaf_at<T, S>(reinterpret_cast<T*>(base + offsets[next++]));
  }
  template <class Dst, class N>
  void run(const Dst& dst, const N& n) {
    detail::run(dst, n, stream);
  }
  template <class L>
  std::remove_cvref_t<L> leaf(L&& l) const {
    return std::forward<L>(l);
  }
  template <class L>
  plan::binding bound(const L& value) const {
    return {-1, value.data()};
  }
  template <class P>
  auto resolve(plan::binding b) const {
    using T = typename P::element_type;
    return tenfold::detail::leaf<T, typename P::shape_type, P::strides, P::offset, device_holder<T>>{{}, {static_cast<T*>(b.data)}};
  }
};
} // namespace tenfold::cuda
