#pragma once
// tenfold::dist::mpi_communicator: collectives between processes and hosts over MPI (launched with
// mpirun). An optional layer, like io/: tenfold.hpp does not include it, and only a target that
// includes it links MPI (CMake: find_package(MPI COMPONENTS C), target_link_libraries(... MPI::MPI_C)).
//
//   int main(int argc, char** argv) {
//     tenfold::dist::mpi_communicator comm(argc, argv);   // MPI_Init here, MPI_Finalize at the end
//     try { ... comm.allreduce(grads, reduce_op::mean); ... }
//     catch (const std::exception& e) { comm.abort(e.what()); } // ends every rank, not just this one
//   }
//
// Collectives work in place on a std::span, a Tensor or a TensorMap of float, double or integers.
// Every collective is non-blocking underneath (MPI_I*) and waited for with a deadline (the option
// `timeout`, or TENFOLD_DIST_TIMEOUT in seconds; 300 s by default): a rank that died, hangs, or called
// another collective makes the others throw tenfold::error saying so, instead of waiting forever. An
// MPI error is a tenfold::error with MPI's own message. A failing rank must end the job with abort()
// (MPI_Abort): a rank that just returns would leave the others waiting for it until their deadline; a
// communicator that owns MPI and is destroyed by an exception aborts the job itself.
// Only MPI's C interface is used: skip the C++ bindings (removed from MPI 3), which would need one
// more library at link time.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include "tenfold/core/error.hpp"
#include "tenfold/dist/communicator.hpp"

namespace tenfold::dist {

namespace detail {
template <class T>
MPI_Datatype mpi_type() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<U, double>) return MPI_DOUBLE;
  else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool> && sizeof(U) == 1)
    return std::is_signed_v<U> ? MPI_INT8_T : MPI_UINT8_T;
  else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool> && sizeof(U) == 4)
    return std::is_signed_v<U> ? MPI_INT32_T : MPI_UINT32_T;
  else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool> && sizeof(U) == 8)
    return std::is_signed_v<U> ? MPI_INT64_T : MPI_UINT64_T;
  else static_assert(sizeof(T) == 0, "tenfold::dist: collectives take float, double or 8/32/64-bit integers");
}
template <class T>
constexpr std::string_view type_name() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return "float";
  else if constexpr (std::is_same_v<U, double>) return "double";
  else if constexpr (std::is_signed_v<U>) return "signed integer";
  else return "unsigned integer";
}
inline MPI_Op mpi_op(reduce_op op) {
  switch (op) {
  case reduce_op::max:
    return MPI_MAX;
  case reduce_op::min:
    return MPI_MIN;
  default:
    return MPI_SUM; // mean: a sum, then divided
  }
}
inline double timeout_from_environment(double fallback) {
  if (const char* e = std::getenv("TENFOLD_DIST_TIMEOUT")) {
    char* end = nullptr;
    const double s = std::strtod(e, &end);
    if (end != e && *end == '\0' && s > 0) return s;
  }
  return fallback;
}
} // namespace detail

struct mpi_options {
  // How long a collective may wait for the other ranks before this rank gives up (seconds);
  // TENFOLD_DIST_TIMEOUT overrides it.
  double timeout_s = 300;
};

class mpi_communicator {
 public:
  // A collective started by allreduce_start(); wait() completes it (each request exactly once).
  struct pending {
    MPI_Request request = MPI_REQUEST_NULL;
    const char* what = "";
    std::size_t count = 0;
    std::string_view type;
  };

  // Initialises MPI (unless it already is) and finalizes it on destruction if it initialised it. The
  // communicator is a duplicate of MPI_COMM_WORLD, so its traffic never mixes with the program's own.
  mpi_communicator(int& argc, char**& argv, mpi_options o = {}) {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      // The thread pool's workers never call MPI: the main thread alone does (FUNNELED).
      if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        throw error("tenfold::dist: MPI_Init_thread failed");
      owns_mpi_ = true;
    }
    setup(MPI_COMM_WORLD, o);
  }
  // Over an existing communicator (MPI already initialised by the caller, who finalizes it).
  explicit mpi_communicator(MPI_Comm comm, mpi_options o = {}) {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) throw error("tenfold::dist: mpi_communicator(MPI_Comm) needs MPI initialised (MPI_Init) first");
    setup(comm, o);
  }
  mpi_communicator(const mpi_communicator&) = delete;
  mpi_communicator& operator=(const mpi_communicator&) = delete;

  ~mpi_communicator() {
    if (owns_mpi_ && std::uncaught_exceptions() > exceptions_at_start_)
      abort("the communicator was destroyed by an exception; ending every rank");
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) MPI_Finalize();
  }

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  // How many ranks share this rank's host (MPI_COMM_TYPE_SHARED): how many split its cores.
  int local_size() const noexcept { return local_size_; }
  bool is_root() const noexcept { return rank_ == 0; }
  double timeout_seconds() const noexcept { return timeout_s_; }
  // Time spent in wait() so far (every collective waits there): the other ranks' lag plus the transfers.
  double seconds_waiting() const noexcept { return waiting_s_; }
  MPI_Comm native() const noexcept { return comm_; }

  // In place: every rank's buffer becomes the elementwise sum (mean, max, min) over the ranks.
  template <buffer B>
  void allreduce(B&& b, reduce_op op = reduce_op::sum) {
    auto s = as_span(b);
    using T = typename decltype(s)::element_type;
    if (op == reduce_op::mean && !std::is_floating_point_v<T>)
      throw error("tenfold::dist: allreduce: a mean needs a float or double buffer");
    pending p = start<T>("allreduce", s.size(), [&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, s.data(), int(s.size()), detail::mpi_type<T>(), detail::mpi_op(op), comm_, r);
    });
    wait(p);
    if (op == reduce_op::mean)
      for (auto& x : s) x /= T(size_);
  }
  // The sum (max, min) allreduce started and left running, so that computation can overlap it (a
  // gradient bucket, while the backward pass goes on); wait() completes it. The buffer must stay alive
  // and untouched until then.
  template <buffer B>
  [[nodiscard]] pending allreduce_start(B&& b, reduce_op op = reduce_op::sum) {
    auto s = as_span(b);
    using T = typename decltype(s)::element_type;
    if (op == reduce_op::mean)
      throw error("tenfold::dist: allreduce_start: a mean is a sum divided afterwards; use sum");
    return start<T>("allreduce", s.size(), [&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, s.data(), int(s.size()), detail::mpi_type<T>(), detail::mpi_op(op), comm_, r);
    });
  }
  // Root's buffer copied into every rank's.
  template <buffer B>
  void broadcast(B&& b, int root = 0) {
    auto s = as_span(b);
    using T = typename decltype(s)::element_type;
    check_root(root, "broadcast");
    pending p = start<T>("broadcast", s.size(), [&](MPI_Request* r) {
      return MPI_Ibcast(s.data(), int(s.size()), detail::mpi_type<T>(), root, comm_, r);
    });
    wait(p);
  }
  // `in` holds size() blocks of out.size() elements; rank i's `out` becomes the sum (max, min) over the
  // ranks of block i (ZeRO's gradient step: each rank keeps the shard it updates).
  template <class T>
  void reduce_scatter(std::span<const T> in, std::span<T> out, reduce_op op = reduce_op::sum) {
    if (in.size() != out.size() * std::size_t(size_))
      throw error(::tenfold::detail::message("tenfold::dist: reduce_scatter: the input has ", in.size(),
                                             " elements, expected ", size_, " blocks of ", out.size()));
    if (op == reduce_op::mean && !std::is_floating_point_v<T>)
      throw error("tenfold::dist: reduce_scatter: a mean needs a float or double buffer");
    pending p = start<T>("reduce_scatter", in.size(), [&](MPI_Request* r) {
      return MPI_Ireduce_scatter_block(in.data(), out.data(), int(out.size()), detail::mpi_type<T>(),
                                       detail::mpi_op(op), comm_, r);
    });
    wait(p);
    if (op == reduce_op::mean)
      for (auto& x : out) x /= T(size_);
  }
  // Every rank's `in` (the same size on each) concatenated in rank order into every rank's `out`.
  template <class T>
  void all_gather(std::span<const T> in, std::span<T> out) {
    if (out.size() != in.size() * std::size_t(size_))
      throw error(::tenfold::detail::message("tenfold::dist: all_gather: the output has ", out.size(),
                                             " elements, expected ", size_, " blocks of ", in.size()));
    pending p = start<T>("all_gather", out.size(), [&](MPI_Request* r) {
      return MPI_Iallgather(in.data(), int(in.size()), detail::mpi_type<T>(), out.data(), int(in.size()),
                            detail::mpi_type<T>(), comm_, r);
    });
    wait(p);
  }
  // Uneven blocks, started and left running (ZeRO's gradient step, bucket by bucket, while the backward
  // pass goes on): `in` holds size() blocks one after another, block i of counts[i] elements, and rank
  // i's `out` (counts[i] elements) becomes their sum over the ranks. `in`, `out` and `counts` must stay
  // alive and untouched until wait().
  template <class T>
  [[nodiscard]] pending reduce_scatter_start(std::span<const T> in, std::span<T> out, std::span<const int> counts) {
    check_blocks("reduce_scatter", in.size(), counts, {});
    if (out.size() != std::size_t(counts[std::size_t(rank_)]))
      throw error(::tenfold::detail::message("tenfold::dist: reduce_scatter: rank ", rank_, "'s output has ",
                                             out.size(), " elements, its block ", counts[std::size_t(rank_)]));
    return start<T>("reduce_scatter", in.size(), [&](MPI_Request* r) {
      return MPI_Ireduce_scatter(in.data(), out.data(), counts.data(), detail::mpi_type<T>(), MPI_SUM, comm_, r);
    });
  }
  // In place, uneven blocks, started: rank i's block of `b` (counts[i] elements from displs[i]) is copied
  // into every rank's `b` (ZeRO's parameter step: each rank updated its block). `b`, `counts` and
  // `displs` must stay alive, and `b` untouched, until wait().
  template <buffer B>
  [[nodiscard]] pending all_gather_start(B&& b, std::span<const int> counts, std::span<const int> displs) {
    auto s = as_span(b);
    using T = typename decltype(s)::element_type;
    check_blocks("all_gather", s.size(), counts, displs);
    return start<T>("all_gather", s.size(), [&](MPI_Request* r) {
      return MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s.data(), counts.data(), displs.data(),
                             detail::mpi_type<T>(), comm_, r);
    });
  }
  void barrier() {
    pending p = start<char>("barrier", 0, [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
    wait(p);
  }
  // Throws, on every rank, when the ranks do not all pass the same value (a shape, a buffer size, a
  // checksum): a mismatch found before the collective that would have gone wrong.
  void check_same(std::int64_t value, std::string_view what) {
    std::int64_t v[2] = {value, -value}; // max of both: the largest and the smallest value
    allreduce(std::span(v), reduce_op::max);
    if (v[0] != -v[1])
      throw error(::tenfold::detail::message("tenfold::dist: the ranks disagree on ", std::string(what), ": from ",
                                             -v[1], " to ", v[0], " (this rank, ", rank_, ": ", value, ")"));
  }

  // Completes a started collective, polling it until it finishes or the deadline passes.
  void wait(pending& p) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    for (long polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Test(&p.request, &done, MPI_STATUS_IGNORE), "MPI_Test", p.what);
      if (done) {
        waiting_s_ += std::chrono::duration<double>(clock::now() - t0).count();
        return;
      }
      if (polls < 4000) continue; // the other ranks are usually microseconds away: spin
      const double waited = std::chrono::duration<double>(clock::now() - t0).count();
      if (waited > timeout_s_)
        throw error(::tenfold::detail::message("tenfold::dist: rank ", rank_, " of ", size_, ": ", p.what, " of ",
                                               p.count, " ", std::string(p.type), " values did not complete within ",
                                               seconds(timeout_s_),
                                               " s: another rank has died, hangs, or called a different collective "
                                               "(TENFOLD_DIST_TIMEOUT sets the limit)"));
      // A rank far behind (evaluating, writing files): give its core back, on an oversubscribed host too.
      if (waited < 0.01) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // Prints "tenfold::dist: rank R of N: message" on stderr and ends every rank of the job (MPI_Abort;
  // a world of one just exits with `code`).
  [[noreturn]] void abort(std::string_view message, int code = 1) const {
    // The communicator's own errors already say which rank they come from; a world of one needs no rank.
    if (size_ == 1 || message.starts_with("tenfold::dist: rank "))
      std::fprintf(stderr, "%.*s\n", int(message.size()), message.data());
    else
      std::fprintf(stderr, "tenfold::dist: rank %d of %d: %.*s\n", rank_, size_, int(message.size()), message.data());
    std::fflush(stderr);
    std::fflush(stdout);
    if (size_ == 1) { // nobody waits for this rank: end as a failing program does, without MPI's notice
      MPI_Finalize();
      std::exit(code);
    }
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return; in case an implementation does
  }

 private:
  void setup(MPI_Comm comm, const mpi_options& o) {
    exceptions_at_start_ = std::uncaught_exceptions();
    timeout_s_ = detail::timeout_from_environment(o.timeout_s);
    check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup", "setup");
    // Errors come back as codes (and become tenfold::error) instead of ending the process silently.
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "setup");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank", "setup");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size", "setup");
    MPI_Comm local = MPI_COMM_NULL;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type",
          "setup");
    check(MPI_Comm_size(local, &local_size_), "MPI_Comm_size", "setup");
    MPI_Comm_free(&local);
  }
  template <class T, class F>
  pending start(const char* what, std::size_t count, F&& call) {
    if (count > std::size_t(INT_MAX))
      throw error(::tenfold::detail::message("tenfold::dist: ", what, " of ", count, " elements: MPI counts stop at ",
                                             INT_MAX));
    pending p{MPI_REQUEST_NULL, what, count, detail::type_name<T>()};
    check(call(&p.request), what, what);
    return p;
  }
  static std::string seconds(double s) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", s);
    return b;
  }
  void check(int rc, const char* call, const char* what) const {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
    throw error(::tenfold::detail::message("tenfold::dist: rank ", rank_, " of ", size_, ": ", call, " (", what,
                                           ") failed: ", std::string(text, std::size_t(length))));
  }
  // size() blocks of counts[i] elements: one after another in a buffer of `total` (no displs), or each
  // at displs[i] inside it.
  void check_blocks(const char* what, std::size_t total, std::span<const int> counts,
                    std::span<const int> displs) const {
    if (counts.size() != std::size_t(size_) || (!displs.empty() && displs.size() != std::size_t(size_)))
      throw error(::tenfold::detail::message("tenfold::dist: ", what, ": ", counts.size(), " counts and ",
                                             displs.size(), " displacements for ", size_, " ranks"));
    std::size_t sum = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      const long long at = displs.empty() ? (long long)sum : displs[i];
      if (counts[i] < 0 || at < 0 || std::size_t(at) + std::size_t(counts[i]) > total)
        throw error(::tenfold::detail::message("tenfold::dist: ", what, ": rank ", i, "'s block (", counts[i],
                                               " elements at ", at, ") is not inside the buffer of ", total));
      sum += std::size_t(counts[i]);
    }
    if (displs.empty() && sum != total)
      throw error(::tenfold::detail::message("tenfold::dist: ", what, ": the blocks hold ", sum,
                                             " elements, the buffer ", total));
  }
  void check_root(int root, const char* what) const {
    if (root < 0 || root >= size_)
      throw error(
          ::tenfold::detail::message("tenfold::dist: ", what, ": root ", root, " is not a rank of 0..", size_ - 1));
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_size_ = 1;
  double timeout_s_ = 300, waiting_s_ = 0;
  bool owns_mpi_ = false;
  int exceptions_at_start_ = 0;
};
} // namespace tenfold::dist
