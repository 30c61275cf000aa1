// The MPI communicator (include/tenfold/dist/mpi.hpp) under mpirun, any number of ranks:
//   mpi_test          every collective on spans, Tensors and TensorMaps, and the errors it reports
//   mpi_test kill     rank 1 is killed (SIGKILL) while rank 0 is in an allreduce
//   mpi_test stop     rank 1 stops (SIGSTOP, a hung rank): rank 0's allreduce times out (TENFOLD_DIST_TIMEOUT)
//   mpi_test throw    rank 1 fails with an exception while rank 0 is in an allreduce
// The three failures must end every rank with a clear message, never hang (tests/dist/CMakeLists.txt
// checks the message and the time). A plain program, not Catch2: every rank runs the checks, and a
// failed check ends the job through abort(), naming the check and the rank.
#include <signal.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <tenfold/dist/mpi.hpp>
#include <tenfold/tenfold.hpp>

#include "dist_check.hpp"

using namespace tenfold;
using dist::reduce_op;
using dist_check::checks;
using dist_check::throws_containing;

namespace {
void collectives(dist::mpi_communicator& comm) {
  const int r = comm.rank(), n = comm.size();
  const float tri = float(n * (n + 1) / 2); // sum over ranks of (rank + 1)
  CHECK(n >= 1 && r >= 0 && r < n && comm.local_size() >= 1 && comm.local_size() <= n);

  // a Tensor, sum and mean
  Tensor<float, shape<3, 5>> t = full<float, shape<3, 5>>(float(r + 1));
  comm.allreduce(t);
  for (float x : t) CHECK(x == tri);
  t = full<float, shape<3, 5>>(float(r + 1));
  comm.allreduce(t, reduce_op::mean);
  for (float x : t) CHECK(std::abs(x - tri / float(n)) < 1e-6f);
  // a TensorMap over part of a buffer; what lies around it is untouched
  std::vector<float> storage(40, -1.0f);
  auto m = map<float, shape<4, 8>>(storage.data() + 4);
  m = full<float, shape<4, 8>>(float(r));
  comm.allreduce(m, reduce_op::max);
  for (float x : m) CHECK(x == float(n - 1));
  CHECK(storage[3] == -1.0f && storage[36] == -1.0f);
  // a span of doubles, min; an integer sum
  std::vector<double> d(7, double(r + 10));
  comm.allreduce(std::span(d), reduce_op::min);
  for (double x : d) CHECK(x == 10.0);
  std::vector<std::int64_t> counts{r, 1, std::int64_t(1) << 40};
  comm.allreduce(counts);
  CHECK(counts[0] == std::int64_t(n) * (n - 1) / 2 && counts[1] == n && counts[2] == (std::int64_t(n) << 40));
  // large enough to leave the small-message algorithms (a gradient bucket's size)
  std::vector<float> big(300001);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = float(i % 1000) * float(r + 1);
  auto p = comm.allreduce_start(big);
  comm.wait(p);
  for (std::size_t i = 0; i < big.size(); i += 997) CHECK(big[i] == float(i % 1000) * tri);

  // a packed layout's groups, allreduced apart and together in flight: each group's run is summed, its
  // members' padding stays zero, the other group is untouched until its own request
  using grads = packed<float, group<member<shape<7, 3>, struct ga_>, member<shape<5>, struct gb_>>, group<member<shape<40>, struct gc_>>>;
  grads g;
  g.get<ga_>() = full<float, shape<7, 3>>(float(r + 1));
  g.get<gb_>() = full<float, shape<5>>(float(2 * r));
  g.get<gc_>() = full<float, shape<40>>(float(-r));
  auto first = comm.allreduce_start(g.group<0>());
  auto second = comm.allreduce_start(g.group<1>());
  comm.wait(second), comm.wait(first);
  for (float x : g.get<ga_>()) CHECK(x == tri);
  for (float x : g.get<gb_>()) CHECK(x == float(n * (n - 1)));
  for (float x : g.get<gc_>()) CHECK(x == -float(n * (n - 1) / 2));
  CHECK(g.data()[21] == 0.0f && g.data()[grads::offset<gb_> + 5] == 0.0f); // the padding
  comm.check_same(grads::size, "the packed layout's size");

  // broadcast from the last rank
  Tensor<std::int32_t, shape<6>> b = full<std::int32_t, shape<6>>(r);
  comm.broadcast(b, n - 1);
  for (auto x : b) CHECK(x == n - 1);

  // reduce_scatter and all_gather: ZeRO's pair
  std::vector<float> in(std::size_t(3 * n)), out(3);
  for (int i = 0; i < 3 * n; ++i) in[std::size_t(i)] = float(i + r);
  comm.reduce_scatter(std::span<const float>(in), std::span<float>(out));
  for (int j = 0; j < 3; ++j) CHECK(out[std::size_t(j)] == float(n * (3 * r + j) + n * (n - 1) / 2));
  std::vector<float> mine{float(r), float(-r)}, all(std::size_t(2 * n));
  comm.all_gather(std::span<const float>(mine), std::span<float>(all));
  for (int k = 0; k < n; ++k) CHECK(all[std::size_t(2 * k)] == float(k) && all[std::size_t(2 * k + 1)] == float(-k));
  // the same with uneven blocks, started and left running: rank i's block has i + 1 elements (ZeRO's
  // pieces of a bucket), reduce-scattered out of one buffer, then all-gathered back into it in place
  const auto ranks = std::size_t(n);
  std::vector<int> sizes(ranks), at(ranks);
  for (int i = 0; i < n; ++i) sizes[std::size_t(i)] = i + 1, at[std::size_t(i)] = i * (i + 1) / 2;
  const int total = n * (n + 1) / 2;
  const auto elements = std::size_t(total);
  std::vector<float> whole(elements), piece(std::size_t(r) + 1, -1.0f);
  for (int i = 0; i < total; ++i) whole[std::size_t(i)] = float(i * (r + 1));
  auto rs =
      comm.reduce_scatter_start(std::span<const float>(whole), std::span<float>(piece), std::span<const int>(sizes));
  comm.wait(rs);
  for (int j = 0; j <= r; ++j) CHECK(piece[std::size_t(j)] == float(at[std::size_t(r)] + j) * tri);
  for (int j = 0; j <= r; ++j) whole[std::size_t(at[std::size_t(r)] + j)] = piece[std::size_t(j)];
  auto ag = comm.all_gather_start(whole, std::span<const int>(sizes), std::span<const int>(at));
  comm.wait(ag);
  for (int i = 0; i < total; ++i) CHECK(whole[std::size_t(i)] == float(i) * tri);
  // (blocks that do not fit: refused before anything starts)
  CHECK(throws_containing(
      [&] {
        (void)comm.reduce_scatter_start(std::span<const float>(whole).first(std::size_t(total - 1)),
                                        std::span<float>(piece), std::span<const int>(sizes));
      },
      "is not inside the buffer of"));
  CHECK(throws_containing(
      [&] {
        (void)comm.reduce_scatter_start(std::span<const float>(whole), std::span<float>(piece).first(std::size_t(r)),
                                        std::span<const int>(sizes));
      },
      "'s output has"));
  CHECK(throws_containing(
      [&] {
        (void)comm.all_gather_start(std::span(whole).first(std::size_t(total - 1)), std::span<const int>(sizes),
                                    std::span<const int>(at));
      },
      "is not inside the buffer"));
  CHECK(throws_containing(
      [&] {
        (void)comm.all_gather_start(whole, std::span<const int>(sizes).first(std::size_t(n - 1)),
                                    std::span<const int>(at));
      },
      "counts and"));
  comm.barrier();

  // errors: found locally, before any collective starts (so every rank throws, nobody waits)
  in.push_back(0.0f);
  CHECK(throws_containing([&] { comm.reduce_scatter(std::span<const float>(in), std::span<float>(out)); }, "expected"));
  CHECK(throws_containing([&] { comm.broadcast(b, n); }, "is not a rank"));
  CHECK(throws_containing([&] { comm.allreduce(counts, reduce_op::mean); }, "a mean needs a float"));
  // a value the ranks disagree on: every rank throws, naming the range
  comm.check_same(42, "the answer");
  if (n > 1)
    CHECK(throws_containing([&] { comm.check_same(r, "the rank"); }, "the ranks disagree on the rank: from 0 to"));
}

void failing(dist::mpi_communicator& comm, const std::string& how) {
  std::vector<float> v(1000, 1.0f);
  comm.allreduce(v); // everyone is up
  if (comm.rank() == 1) {
    if (how == "kill") raise(SIGKILL);
    if (how == "stop") raise(SIGSTOP);
    if (how == "throw") throw error("rank 1 failed on purpose");
  }
  for (int i = 0; i < 1000000; ++i) comm.allreduce(v); // rank 0 waits here for rank 1
  throw error("the job went on without rank 1");
}
} // namespace

int main(int argc, char** argv) {
  dist::mpi_communicator comm(argc, argv);
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode.empty()) {
      collectives(comm);
      if (comm.is_root()) std::printf("mpi_test: %d checks passed on each of %d ranks\n", checks, comm.size());
    } else if (mode == "kill" || mode == "stop" || mode == "throw") {
      if (comm.size() < 2) throw error("mpi_test " + mode + " needs at least 2 ranks");
      failing(comm, mode);
    } else {
      throw error("mpi_test: unknown mode " + mode);
    }
  } catch (const std::exception& e) {
    comm.abort(e.what());
  }
  return 0;
}
