#pragma once
// Collectives between GPUs through NCCL (shipped with the CUDA toolkit), with the interface of
// dist/mpi.hpp's mpi_communicator, on device memory: a tenfold::cuda::Tensor or a std::span of device
// elements. Each communicator owns one GPU and a CUDA stream its collectives are ordered on.
//
// How ranks meet (one rank per GPU, as llm.c and PyTorch DDP run):
//  - several processes (mpirun): `nccl_communicator(world, device)` — rank 0 of `world` (any
//    communicator with rank(), size() and broadcast of bytes: mpi_communicator) makes NCCL's unique id
//    and broadcasts it; every rank joins on its device (usually its local rank).
//  - one process, several GPUs: `nccl_communicator::group(devices)`, one communicator per device; a
//    collective on all of them goes through `nccl_group(comms, f)` (NCCL's group calls: one thread
//    cannot wait for one GPU before the others have started).
//  - one GPU: `nccl_communicator(device)`, a world of one through NCCL all the same.
// Errors never hang a job: communicators are created non-blocking, every call is checked (NCCL's own
// description in a tenfold::error), and a wait polls the stream and NCCL's asynchronous error under a
// deadline (TENFOLD_DIST_TIMEOUT seconds, default 300); past it the communicator is aborted and the
// wait throws, naming the collective, its size and the rank.
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenfold/core/error.hpp"
#include "tenfold/cuda/error.hpp"
#include "tenfold/cuda/memory.hpp"
#include "tenfold/cuda/tensor.hpp"
#include "tenfold/dist/communicator.hpp"

namespace tenfold::dist {

namespace nccl_detail {
inline std::string message(const char* call, ncclResult_t r) {
  return std::string("tenfold::dist::nccl: ") + call + " failed: " + ncclGetErrorString(r);
}
template <class T>
constexpr ncclDataType_t type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return ncclFloat32;
  else if constexpr (std::is_same_v<U, double>) return ncclFloat64;
  else if constexpr (std::is_same_v<U, std::int32_t>) return ncclInt32;
  else if constexpr (std::is_same_v<U, std::int64_t>) return ncclInt64;
  else if constexpr (std::is_same_v<U, std::uint8_t>) return ncclUint8;
  else if constexpr (std::is_same_v<U, std::int8_t>) return ncclInt8;
  else static_assert(sizeof(T) == 0, "tenfold::dist::nccl: collectives take float, double, int32, int64, int8 or uint8");
}
constexpr ncclRedOp_t op_of(reduce_op op) {
  switch (op) {
  case reduce_op::sum: return ncclSum;
  case reduce_op::mean: return ncclAvg;
  case reduce_op::max: return ncclMax;
  default: return ncclMin;
  }
}
inline double timeout_from_env() {
  if (const char* e = std::getenv("TENFOLD_DIST_TIMEOUT")) {
    char* end = nullptr;
    const double s = std::strtod(e, &end);
    if (end != e && s > 0) return s;
  }
  return 300;
}
} // namespace nccl_detail

struct nccl_options {
  double timeout_seconds = nccl_detail::timeout_from_env();
};

class nccl_communicator {
 public:
  struct pending {
    const char* what = nullptr;
    std::size_t count = 0;
  };

  // A world of one GPU.
  explicit nccl_communicator(int device, nccl_options o = {}) : nccl_communicator(device, o, 1, 0, unique_id()) {}

  // Rank world.rank() of world.size() ranks, on `device`; rank 0's id reaches the others through `world`.
  template <class World>
    requires requires(World& w, std::span<char> b) {
      w.rank();
      w.size();
      w.broadcast(b, 0);
    }
  nccl_communicator(World& world, int device, nccl_options o = {})
      : nccl_communicator(device, o, world.size(), world.rank(), shared_id(world)) {}

  // One communicator per listed device, all in this process.
  static std::vector<nccl_communicator> group(std::span<const int> devices, nccl_options o = {}) {
    const ncclUniqueId id = unique_id();
    std::vector<nccl_communicator> comms;
    comms.reserve(devices.size());
    // Non-blocking creation: each init returns at once and completes in wait_ready.
    check_call(ncclGroupStart(), "ncclGroupStart()");
    for (std::size_t r = 0; r < devices.size(); ++r)
      comms.push_back(nccl_communicator(devices[r], o, int(devices.size()), int(r), id, false));
    check_call(ncclGroupEnd(), "ncclGroupEnd()");
    for (auto& c : comms) c.wait_ready("ncclCommInitRankConfig");
    return comms;
  }

  nccl_communicator(nccl_communicator&& o) noexcept
      : comm_(std::exchange(o.comm_, nullptr)), stream_(std::move(o.stream_)), device_(o.device_), rank_(o.rank_),
        size_(o.size_), timeout_s_(o.timeout_s_), waiting_s_(o.waiting_s_) {}
  nccl_communicator& operator=(nccl_communicator&&) = delete;
  nccl_communicator(const nccl_communicator&) = delete;
  ~nccl_communicator() {
    if (comm_) (void)ncclCommDestroy(comm_); // (a destructor must not throw)
  }

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  int device() const noexcept { return device_; }
  bool is_root() const noexcept { return rank_ == 0; }
  cuda::stream_ref stream() const noexcept { return {stream_.get()}; }
  double seconds_waiting() const noexcept { return waiting_s_; }

  // ---- collectives: enqueue on this communicator's stream, then wait (or keep the pending) ----
  template <class T>
  pending allreduce_start(std::span<T> data, reduce_op op = reduce_op::sum) {
    device_scope d(device_);
    check(ncclAllReduce(data.data(), data.data(), data.size(), nccl_detail::type_of<T>(), nccl_detail::op_of(op), comm_, stream_.get()),
          "ncclAllReduce");
    return {"allreduce", data.size()};
  }
  template <class T>
  void allreduce(std::span<T> data, reduce_op op = reduce_op::sum) {
    auto p = allreduce_start(data, op);
    wait(p);
  }
  template <class T>
  pending broadcast_start(std::span<T> data, int root = 0) {
    check_root(root, "broadcast");
    device_scope d(device_);
    check(ncclBroadcast(data.data(), data.data(), data.size(), nccl_detail::type_of<T>(), root, comm_, stream_.get()), "ncclBroadcast");
    return {"broadcast", data.size()};
  }
  template <class T>
  void broadcast(std::span<T> data, int root = 0) {
    auto p = broadcast_start(data, root);
    wait(p);
  }
  // in: size() * out.size() elements; out: this rank's block of the reduction.
  template <class T>
  pending reduce_scatter_start(std::span<const T> in, std::span<T> out, reduce_op op = reduce_op::sum) {
    check_sizes(in.size(), out.size(), "reduce_scatter");
    device_scope d(device_);
    check(ncclReduceScatter(in.data(), out.data(), out.size(), nccl_detail::type_of<T>(), nccl_detail::op_of(op), comm_, stream_.get()),
          "ncclReduceScatter");
    return {"reduce_scatter", out.size()};
  }
  template <class T>
  void reduce_scatter(std::span<const T> in, std::span<T> out, reduce_op op = reduce_op::sum) {
    auto p = reduce_scatter_start(in, out, op);
    wait(p);
  }
  // in: this rank's block; out: size() * in.size() elements, the blocks in rank order.
  template <class T>
  pending all_gather_start(std::span<const T> in, std::span<T> out) {
    check_sizes(out.size(), in.size(), "all_gather");
    device_scope d(device_);
    check(ncclAllGather(in.data(), out.data(), in.size(), nccl_detail::type_of<T>(), comm_, stream_.get()), "ncclAllGather");
    return {"all_gather", in.size()};
  }
  template <class T>
  void all_gather(std::span<const T> in, std::span<T> out) {
    auto p = all_gather_start(in, out);
    wait(p);
  }
  // The same on device tensors.
  template <class T, class S>
  void allreduce(cuda::Tensor<T, S>& t, reduce_op op = reduce_op::sum) {
    allreduce(std::span<T>(t.data(), std::size_t(S::size)), op);
  }
  template <class T, class S>
  void broadcast(cuda::Tensor<T, S>& t, int root = 0) {
    broadcast(std::span<T>(t.data(), std::size_t(S::size)), root);
  }

  // Until the stream has run everything enqueued, or the deadline: then the communicator is aborted
  // (every rank's pending NCCL work fails instead of hanging) and this throws.
  void wait(pending& p) {
    const auto start = std::chrono::steady_clock::now();
    for (int polls = 0;; ++polls) {
      const cudaError_t s = cudaStreamQuery(stream_.get());
      if (s == cudaSuccess) break;
      if (s != cudaErrorNotReady) cuda::check(s, "cudaStreamQuery (after an NCCL collective)");
      ncclResult_t async = ncclSuccess;
      check(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
      if (async != ncclSuccess && async != ncclInProgress) fail(p, nccl_detail::message("the collective", async));
      const double waited = seconds_since(start);
      if (waited > timeout_s_) {
        (void)ncclCommAbort(comm_);
        comm_ = nullptr;
        fail(p, "did not complete within " + std::to_string(int(timeout_s_)) + " s (TENFOLD_DIST_TIMEOUT); communicator aborted");
      }
      if (polls > 4000) std::this_thread::sleep_for(std::chrono::microseconds(waited > 0.01 ? 100 : 0));
    }
    waiting_s_ += seconds_since(start);
    p = {};
  }

  // Enqueues (not waits for) a collective: what f does for each communicator inside nccl_group.
  friend void nccl_group(std::span<nccl_communicator> comms, auto&& f) {
    std::vector<pending> p(comms.size());
    check_call(ncclGroupStart(), "ncclGroupStart()");
    for (std::size_t i = 0; i < comms.size(); ++i) p[i] = f(comms[i], i);
    check_call(ncclGroupEnd(), "ncclGroupEnd()");
    for (std::size_t i = 0; i < comms.size(); ++i) comms[i].wait(p[i]);
  }

 private:
  nccl_communicator(int device, nccl_options o, int size, int rank, ncclUniqueId id, bool wait_now = true)
      : stream_(make_stream(device)), device_(device), rank_(rank), size_(size), timeout_s_(o.timeout_seconds) {
    device_scope d(device_);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t r = ncclCommInitRankConfig(&comm_, size, id, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) throw error(nccl_detail::message("ncclCommInitRankConfig", r) + where());
    if (wait_now) wait_ready("ncclCommInitRankConfig");
  }

  struct device_scope {
    int previous = 0;
    explicit device_scope(int d) {
      TENFOLD_CUDA_CHECK(cudaGetDevice(&previous));
      if (previous != d) TENFOLD_CUDA_CHECK(cudaSetDevice(d));
    }
    ~device_scope() { (void)cudaSetDevice(previous); }
  };
  static cuda::stream make_stream(int device) {
    device_scope d(device);
    return cuda::stream{};
  }
  static ncclUniqueId unique_id() {
    ncclUniqueId id;
    check_call(ncclGetUniqueId(&id), "ncclGetUniqueId(&id)");
    return id;
  }
  template <class World>
  static ncclUniqueId shared_id(World& world) {
    ncclUniqueId id{};
    if (world.rank() == 0) id = unique_id();
    world.broadcast(std::span<char>(id.internal, sizeof id.internal), 0);
    return id;
  }
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  static void check_call(ncclResult_t r, const char* call) {
    if (r != ncclSuccess && r != ncclInProgress) throw error(nccl_detail::message(call, r));
  }
  std::string where() const {
    return " (rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ", device " + std::to_string(device_) + ")";
  }
  void check(ncclResult_t r, const char* call) const {
    if (!comm_) throw error(std::string("tenfold::dist::nccl: ") + call + ": the communicator was aborted" + where());
    if (r != ncclSuccess && r != ncclInProgress) throw error(nccl_detail::message(call, r) + where());
  }
  // Non-blocking communicators finish some calls later: until NCCL says the communicator is ready.
  void wait_ready(const char* what) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      ncclResult_t state = ncclSuccess;
      check(ncclCommGetAsyncError(comm_, &state), "ncclCommGetAsyncError");
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) throw error(nccl_detail::message(what, state) + where());
      if (seconds_since(start) > timeout_s_) {
        (void)ncclCommAbort(comm_);
        comm_ = nullptr;
        throw error(std::string("tenfold::dist::nccl: ") + what + " did not complete within " + std::to_string(int(timeout_s_)) +
                    " s (TENFOLD_DIST_TIMEOUT)" + where());
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  void check_root(int root, const char* what) const {
    if (root < 0 || root >= size_)
      throw error(std::string("tenfold::dist::nccl: ") + what + " from root " + std::to_string(root) + ", not a rank" + where());
  }
  void check_sizes(std::size_t whole, std::size_t block, const char* what) const {
    if (whole != block * std::size_t(size_))
      throw error(std::string("tenfold::dist::nccl: ") + what + ": " + std::to_string(whole) + " elements are not " + std::to_string(size_) +
                  " blocks of " + std::to_string(block) + where());
  }
  [[noreturn]] void fail(const pending& p, const std::string& why) const {
    throw error(std::string("tenfold::dist::nccl: ") + (p.what ? p.what : "collective") + " of " + std::to_string(p.count) +
                " elements: " + why + where());
  }

  ncclComm_t comm_ = nullptr;
  cuda::stream stream_;
  int device_ = 0, rank_ = 0, size_ = 1;
  double timeout_s_ = 300, waiting_s_ = 0;
};
} // namespace tenfold::dist
