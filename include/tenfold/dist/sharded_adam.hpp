#pragma once
// tenfold::dist::sharded_adam: Adam whose moments are split over the ranks (ZeRO stage 1, as DeepSpeed
// calls it; llm.c does the same), for a step whose gradients are kept slots (core/step.hpp).
//
// Every bucket of the step's kept slots (step_plan::buckets<MinBytes>) is cut into one piece per rank,
// in rank order, on 64-byte lines. Once the backward pass has completed bucket k, the hook that
// reduce_scatter() gives run_step starts its reduce-scatter: rank r receives the sum over the ranks of
// its piece, into its share (its pieces one after another; nothing is copied out of the arena). update()
// waits for them, runs Adam over the rank's part of every parameter with moments for the share alone (so
// each rank holds 1/size() of Adam's state), and all-gathers each parameter in place, the next one's
// update overlapping the last one's gather. Every replica then holds the parameters a full allreduce and a
// full update would give, bit for bit where the sums are: each element is updated by the same expression,
// and a piece starts on a 16-element boundary of its parameter, so the vector lanes line up as in the
// whole tensor's pass.
//
//   dist::sharded_adam<communicator, plan, bucket_bytes> opt(comm, {.lr = 2e-3f});
//   run_step(statements, arena, opt.reduce_scatter());              // the gradients summed, sharded
//   opt.update(lr, arena, dist::trained(p.w, g.w), ...);            // Adam on this rank's part, gathered
//
// Kept slots that are no parameter (a loss) are summed into the share like the rest and left there:
// the arena still holds this rank's own values. A parameter must be a contiguous tensor with its slot's
// shape and element type; all of a step's trained parameters go to one update() call.
#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "tenfold/autodiff/optim.hpp"
#include "tenfold/core/error.hpp"
#include "tenfold/core/tensor_map.hpp"
#include "tenfold/cpu/step.hpp"
#include "tenfold/dist/communicator.hpp"
#include "tenfold/plan/step.hpp"

namespace tenfold::dist {

// A parameter and the kept slot that holds its gradient.
template <class P, class L>
struct trained_parameter {
  P* param;
  const L* slot;
};
template <class P, class L>
trained_parameter<P, L> trained(P& param, const L& gradient) {
  return {&param, &gradient};
}

template <class Comm, class Plan, index_t MinBytes, class T = float>
class sharded_adam {
  static constexpr plan::bucket_list buckets = Plan::template buckets<MinBytes>;
  static constexpr int bucket_count = buckets.count;
  static constexpr index_t line = 64 / index_t(sizeof(T)); // elements per 64-byte line
  static_assert(bucket_count > 0, "tenfold::dist::sharded_adam: the step has no kept slots to shard");
  // A part of a parameter as rows of a line: as many as the kept region has at most
  using rows_shape = shape<upto<Plan::kept_bytes / 64>, line>;

 public:
  sharded_adam(Comm& comm, optim::adam_options o = {})
      : adam_(o), comm_(&comm), ranks_(comm.size()), rank_(comm.rank()) {
    counts_.resize(std::size_t(bucket_count * ranks_));
    index_t at = 0;
    for (int k = 0; k < bucket_count; ++k) {
      const index_t begin = buckets.begin[k] / index_t(sizeof(T)), lines = (buckets.end[k] - buckets.begin[k]) / 64;
      for (int r = 0; r < ranks_; ++r) {
        const index_t first = lines * r / ranks_, last = lines * (r + 1) / ranks_;
        counts_[std::size_t(k * ranks_ + r)] = int((last - first) * line);
        if (r == rank_) mine_[std::size_t(k)] = {begin + first * line, begin + last * line, at};
      }
      at += mine_[std::size_t(k)].end - mine_[std::size_t(k)].begin;
    }
    share_.assign(std::size_t(at), T(0)), m_.assign(std::size_t(at), T(0)), v_.assign(std::size_t(at), T(0));
  }

  const optim::adam& optimizer() const noexcept { return adam_; }
  // This rank's share: how many elements of the gradients (and of each moment) it holds.
  index_t share_size() const noexcept { return index_t(share_.size()); }
  // Bucket k's piece on this rank: elements [begin, end) of the arena (as T), at `at` of the share.
  struct piece {
    index_t begin = 0, end = 0, at = 0;
  };
  const piece& mine(int k) const { return mine_.at(std::size_t(k)); }

  // For run_step: as each bucket completes, its reduce-scatter starts (into this rank's share).
  auto reduce_scatter() {
    return on_buckets<T, MinBytes>([this](int k, std::span<T> b) { start_bucket(k, b); });
  }
  // The same by hand: bucket k (all of it, in the arena) is complete; its reduce-scatter starts.
  void start_bucket(int k, std::span<T> b) {
    if (k < 0 || k >= bucket_count || index_t(b.size()) != (buckets.end[k] - buckets.begin[k]) / index_t(sizeof(T)))
      throw error(::tenfold::detail::message("tenfold::dist::sharded_adam: bucket ", k, " of ", b.size(),
                                             " elements is not one of the step's ", bucket_count, " buckets"));
    const piece& p = mine_[std::size_t(k)];
    pending_[std::size_t(k)] = comm_->reduce_scatter_start(
        std::span<const T>(b), std::span<T>(share_.data() + p.at, std::size_t(p.end - p.begin)),
        std::span<const int>(counts_.data() + k * ranks_, std::size_t(ranks_)));
  }

  // After run_step: waits for the sums, then one Adam step (rate lr) over this rank's part of each
  // parameter, each all-gathered in place as soon as it is updated; returns once every rank holds every
  // parameter.
  template <class... P>
  void update(float lr, std::span<std::byte> arena, const P&... params) {
    if (index_t(arena.size()) < Plan::bytes)
      throw error(::tenfold::detail::message("tenfold::dist::sharded_adam: the arena has ", arena.size(),
                                             " bytes; the step's has ", Plan::bytes));
    for (auto& p : pending_) comm_->wait(p);
    adam_.begin_step(lr);
    constexpr std::size_t n = sizeof...(P);
    if (gathers_.size() != n) { // (the first update: where each parameter's blocks lie on every rank)
      gathers_.assign(n, {});
      blocks_.assign(2 * n * std::size_t(ranks_), 0);
      std::size_t i = 0;
      (layout(params, i++), ...);
    }
    std::size_t i = 0;
    (update_one(params, i++), ...);
    for (auto& g : gathers_) comm_->wait(g);
  }

 private:
  template <class L>
  static constexpr index_t offset_of() {
    return Plan::template kept_offset<L>() / index_t(sizeof(T));
  }
  static int bucket_of(index_t o) {
    for (int k = 0; k < bucket_count; ++k)
      if (o * index_t(sizeof(T)) >= buckets.begin[k] && o * index_t(sizeof(T)) < buckets.end[k]) return k;
    throw error("tenfold::dist::sharded_adam: a kept slot outside every bucket");
  }
  // Parameter i's block on each rank (counts, then displacements, in elements of the parameter).
  template <class P, class L>
  void layout(const trained_parameter<P, L>&, std::size_t i) {
    constexpr index_t o = offset_of<L>(), n = P::shape_type::size;
    const int k = bucket_of(o);
    int* counts = blocks_.data() + 2 * i * std::size_t(ranks_);
    int* displs = counts + ranks_;
    index_t b = buckets.begin[k] / index_t(sizeof(T));
    for (int r = 0; r < ranks_; ++r) {
      const index_t e = b + counts_[std::size_t(k * ranks_ + r)];
      const index_t lo = std::max(b, o), hi = std::min(e, o + n);
      counts[r] = lo < hi ? int(hi - lo) : 0, displs[r] = lo < hi ? int(lo - o) : 0;
      b = e;
    }
  }
  template <class P, class L>
  void update_one(const trained_parameter<P, L>& t, std::size_t i) {
    using S = typename P::shape_type;
    static_assert(std::is_same_v<typename P::value_type, T> && std::is_same_v<typename L::element_type, T>,
                  "tenfold::dist::sharded_adam: a parameter and its gradient must have the kept slots' element type");
    static_assert(std::is_same_v<S, typename L::shape_type>,
                  "tenfold::dist::sharded_adam: a parameter must have its gradient slot's shape");
    constexpr index_t o = offset_of<L>(), n = S::size, rows = n / line, tail = n % line;
    static_assert(o % line == 0, "tenfold::dist::sharded_adam: a kept slot off its 64-byte line");
    const piece& p = mine_[std::size_t(bucket_of(o))];
    const index_t lo = std::max(p.begin, o), hi = std::min(p.end, o + n);
    T* param = t.param->data();
    auto part = [&](index_t from) { // param, m, v, g at element `from` of the parameter
      const index_t s = p.at + (o + from - p.begin);
      return std::array<T*, 4>{param + from, m_.data() + s, v_.data() + s, share_.data() + s};
    };
    if (lo < hi) {
      if constexpr (rows > 0) {
        const index_t full = std::min(hi, o + rows * line);
        if (full > lo) {
          using R = rows_shape; // (one type for every parameter: one instantiation of the update)
          const auto q = part(lo - o);
          const index_t length = (full - lo) / line;
          TensorMap<T, R> pm(q[0], length), mm(q[1], length), vm(q[2], length);
          const TensorMap<const T, R> gm(q[3], length);
          adam_.update(pm, mm, vm, gm);
        }
      }
      if constexpr (tail > 0) {
        if (hi == o + n) {
          using R = shape<tail>;
          const auto q = part(rows * line);
          TensorMap<T, R> pm(q[0]), mm(q[1]), vm(q[2]);
          adam_.update(pm, mm, vm, TensorMap<const T, R>(q[3]));
        }
      }
    }
    const int* counts = blocks_.data() + 2 * i * std::size_t(ranks_);
    gathers_[i] =
        comm_->all_gather_start(std::span<T>(param, std::size_t(n)), std::span<const int>(counts, std::size_t(ranks_)),
                                std::span<const int>(counts + ranks_, std::size_t(ranks_)));
  }

  optim::adam adam_;
  Comm* comm_;
  int ranks_, rank_;
  std::array<piece, std::size_t(bucket_count)> mine_{};
  std::vector<int> counts_;      // [bucket][rank]: each rank's piece of each bucket
  std::vector<T> share_, m_, v_; // this rank's pieces of the summed gradients, and Adam's moments of them
  std::array<typename Comm::pending, std::size_t(bucket_count)> pending_{};
  std::vector<typename Comm::pending> gathers_;
  std::vector<int> blocks_; // [parameter]: counts [rank], then displacements [rank]
};
} // namespace tenfold::dist
