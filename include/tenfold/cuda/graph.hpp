#pragma once
// A CUDA graph: the work a function enqueues on a stream, recorded once and replayed with one launch.
// For a step that runs the same kernels again and again (a decode step: ~100 small launches per token),
// a replay costs one launch instead of each kernel's. What a replay reads is the memory its kernels and
// copies were given when captured, as it is then: inputs that change from one replay to the next are
// written there first (a copy from pinned host memory captured in the graph reads that memory at each
// replay), never passed by value.
//
//   cuda::stream s;
//   auto g = cuda::graph::capture(s, [&] { cuda::eval(y, f(x.expr()), arena, s); });
//   for (...) { /* write x's inputs */ g.launch(s); s.synchronize(); }
//
// Capture needs a stream other than the legacy default one, and the function may only enqueue work on
// it: anything that synchronises or allocates with cudaMalloc (a cuda::Tensor made inside, an eval
// without an arena that needs one) ends the capture with an error, which capture() reports as a
// tenfold::error.
#include <utility>

#include "tenfold/cuda/error.hpp"
#include "tenfold/cuda/memory.hpp"

namespace tenfold::cuda {

class graph {
 public:
  graph() = default;
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;
  graph(graph&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  graph& operator=(graph&& o) noexcept {
    std::swap(exec_, o.exec_);
    return *this;
  }
  ~graph() {
    if (exec_) (void)cudaGraphExecDestroy(exec_);
  }

  // Records what f() enqueues on s (nothing runs), then makes it launchable.
  template <class F>
  static graph capture(stream_ref s, F&& f) {
    if (!s.handle)
      throw error("tenfold::cuda::graph::capture: the legacy default stream cannot be captured (use a cuda::stream)");
    TENFOLD_CUDA_CHECK(cudaStreamBeginCapture(s.handle, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t g = nullptr;
    try {
      std::forward<F>(f)();
    } catch (...) {
      (void)cudaStreamEndCapture(s.handle, &g); // leave the stream usable
      if (g) (void)cudaGraphDestroy(g);
      throw;
    }
    TENFOLD_CUDA_CHECK(cudaStreamEndCapture(s.handle, &g));
    graph out;
    const cudaError_t rc = cudaGraphInstantiate(&out.exec_, g, 0);
    (void)cudaGraphDestroy(g);
    TENFOLD_CUDA_CHECK(rc);
    return out;
  }

  // One replay of the captured work, ordered on s like any other launch.
  void launch(stream_ref s) const {
    if (!exec_) throw error("tenfold::cuda::graph::launch: nothing captured");
    TENFOLD_CUDA_CHECK(cudaGraphLaunch(exec_, s.handle));
  }
  explicit operator bool() const noexcept { return exec_ != nullptr; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};
} // namespace tenfold::cuda
