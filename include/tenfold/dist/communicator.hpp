#pragma once
// What every tenfold communicator shares (dist/mpi.hpp: between processes and hosts), and the one that
// needs nothing: `single_process`, a world of one, so that a training loop written against a
// communicator runs unchanged without MPI. Collectives work in place on contiguous buffers: a
// std::span, a tenfold::Tensor or a TensorMap (anything with contiguous data() and size()).
// Nothing here depends on MPI.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ranges>
#include <span>
#include <string_view>
#include <type_traits>

#include "tenfold/core/error.hpp"

namespace tenfold::dist {

enum class reduce_op { sum, mean, max, min };

// A buffer a collective reads and writes in place: contiguous elements of an arithmetic type.
template <class B>
concept buffer = std::ranges::contiguous_range<B> && std::ranges::sized_range<B> &&
    std::is_arithmetic_v<std::remove_cvref_t<std::ranges::range_value_t<B>>> &&
    !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<B>>>;

template <buffer B>
auto as_span(B&& b) {
  return std::span(std::ranges::data(b), std::size_t(std::ranges::size(b)));
}

// A world of one process: every collective leaves its buffer as it is (a mean of one value is that
// value). The same interface as mpi_communicator, so a loop templated on the communicator needs no
// branch for the single-process case.
class single_process {
 public:
  struct pending {}; // a completed request
  int rank() const noexcept { return 0; }
  int size() const noexcept { return 1; }
  int local_size() const noexcept { return 1; }
  bool is_root() const noexcept { return true; }
  double seconds_waiting() const noexcept { return 0; }

  template <buffer B>
  void allreduce(B&&, reduce_op = reduce_op::sum) {}
  template <buffer B>
  pending allreduce_start(B&&) {
    return {};
  }
  // A reduce-scatter over one rank is a copy (counts: one block, all of `in`); an all-gather, nothing.
  template <class T>
  pending reduce_scatter_start(std::span<const T> in, std::span<T> out, std::span<const int> counts) {
    if (counts.size() != 1 || std::size_t(counts[0]) != in.size() || out.size() != in.size())
      throw error("tenfold::dist: reduce_scatter: one rank's block must be the whole input and the whole output");
    std::copy(in.begin(), in.end(), out.begin());
    return {};
  }
  template <buffer B>
  pending all_gather_start(B&&, std::span<const int>, std::span<const int>) {
    return {};
  }
  void wait(pending&) {}
  template <buffer B>
  void broadcast(B&&, int = 0) {}
  void barrier() {}
  void check_same(std::int64_t, std::string_view) {}
  // Prints the message on stderr and ends the process.
  [[noreturn]] void abort(std::string_view message, int code = 1) const {
    std::fprintf(stderr, "%.*s\n", int(message.size()), message.data());
    std::exit(code);
  }
};
} // namespace tenfold::dist
