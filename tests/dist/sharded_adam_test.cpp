// dist::sharded_adam (ZeRO stage 1, include/tenfold/dist/sharded_adam.hpp) under mpirun, any number of
// ranks: a step whose kept slots are gradients of parameters cut every way a piece can fall (rows only,
// rows and a tail, a tail only, a bucket of one line that most ranks get nothing of, a kept slot that is
// no parameter), against the same step with each bucket allreduced and the whole Adam update. The
// parameters must be the same bit for bit after every step, on every rank. A plain program like
// mpi_test: a failed check ends the job through abort(), naming the check and the rank.
#include <bit>
#include <cstdio>
#include <cstring>
#include <string>

#include <tenfold/dist/mpi.hpp>
#include <tenfold/dist/sharded_adam.hpp>
#include <tenfold/tenfold.hpp>

#include "dist_check.hpp"

using namespace tenfold;
using dist_check::checks;
using dist_check::throws_containing;

namespace {

struct params {
  Tensor<float, shape<40, 16>> a; // 40 rows of 16: no tail
  Tensor<float, shape<37>> b;     // 2 rows and a tail of 5
  Tensor<float, shape<3>> c;      // a tail alone
  Tensor<float, shape<300>> d;    // 18 rows and a tail of 12
  Tensor<float, shape<5>> e;      // the last bucket: one line
};
struct grads {
  slot<float, shape<>, kept<struct loss_>> loss; // kept, no parameter
  slot<float, shape<40, 16>, kept<struct ga_>> a;
  slot<float, shape<37>, kept<struct gb_>> b;
  slot<float, shape<3>, kept<struct gc_>> c;
  slot<float, shape<300>, kept<struct gd_>> d;
  slot<float, shape<5>, kept<struct ge_>> e;
};
constexpr index_t min_bytes = 512; // buckets {loss, a}, {b, c, d}, {e}

// Gradient-like values that differ per rank and step and depend on the parameters (so a parameter that
// drifted changes every later step).
auto statements(const grads& g, params& p, int rank, int step) {
  const float s = float(rank + 1) * 0.37f + float(step) * 0.11f;
  return tenfold::statements(assign(g.loss, sum(square(p.a)) * s), assign(g.a, sin(p.a * s) + p.a * 0.1f),
                             assign(g.b, cos(p.b) * s - 0.5f), assign(g.c, p.c * p.c * s),
                             assign(g.d, tanh(p.d + s) * 1e-3f), assign(g.e, exp(p.e * -s) * s));
}
using plan = step_plan<decltype(statements(std::declval<const grads&>(), std::declval<params&>(), 0, 0))>;

void init(params& p) {
  rng r(7);
  p.a = uniform<shape<40, 16>>(r, -1.f, 1.f), p.b = uniform<shape<37>>(r, -1.f, 1.f),
  p.c = uniform<shape<3>>(r, -1.f, 1.f);
  p.d = uniform<shape<300>>(r, -1.f, 1.f), p.e = uniform<shape<5>>(r, -1.f, 1.f);
}
template <class T>
bool same_bits(const T& x, const T& y) {
  return std::memcmp(x.data(), y.data(), sizeof(float) * std::size_t(x.size())) == 0;
}

void sharded_against_whole(dist::mpi_communicator& comm) {
  const int r = comm.rank(), n = comm.size();
  static_assert(plan::buckets<min_bytes>.count == 3);
  grads g;
  params ps, pw; // sharded, whole
  init(ps), init(pw);
  struct {
    Tensor<float, shape<40, 16>> a;
    Tensor<float, shape<37>> b;
    Tensor<float, shape<3>> c;
    Tensor<float, shape<300>> d;
    Tensor<float, shape<5>> e;
  } m, v; // the whole update's moments
  const optim::adam_options o{.lr = 1e-2f, .weight_decay = 1e-2f};
  optim::adam whole(o);
  dist::sharded_adam<dist::mpi_communicator, plan, min_bytes> sharded(comm, o);
  // the shares cover the kept region once
  std::int64_t share[1] = {sharded.share_size()};
  comm.allreduce(std::span(share));
  CHECK(share[0] == plan::kept_bytes / 4);
  for (int k = 0; k < 3; ++k) CHECK(sharded.mine(k).begin % 16 == 0 && sharded.mine(k).end >= sharded.mine(k).begin);
  if (n > 1)
    CHECK(sharded.mine(2).end - sharded.mine(2).begin == (r == n - 1 ? 16 : 0)); // {e}: one line, the last rank's

  struct alignas(64) line {
    std::byte b[64];
  };
  std::vector<line> arenas(std::size_t(2 * plan::bytes / 64)); // (the planner's sizes are whole lines)
  const std::span<std::byte> as(arenas[0].b, std::size_t(plan::bytes)),
      aw(arenas[std::size_t(plan::bytes / 64)].b, std::size_t(plan::bytes));
  static_assert(plan::bytes % 64 == 0);
  Tensor<float, shape<40, 16>> before = ps.a;
  Tensor<float, shape<5>> before_e = ps.e;
  for (int step = 0; step < 6; ++step) {
    const float lr = 1e-2f / float(step + 1);
    run_step(statements(g, ps, r, step), as, sharded.reduce_scatter());
    sharded.update(lr, as, dist::trained(ps.a, g.a), dist::trained(ps.b, g.b), dist::trained(ps.c, g.c),
                   dist::trained(ps.d, g.d), dist::trained(ps.e, g.e));
    std::array<dist::mpi_communicator::pending, 3> req{};
    run_step(statements(g, pw, r, step), aw, on_buckets<float, min_bytes>([&](int k, std::span<float> b) {
               req[std::size_t(k)] = comm.allreduce_start(b);
             }));
    for (auto& q : req) comm.wait(q);
    auto d = [&aw](const auto& slot) { return plan::kept(aw, slot); };
    whole.begin_step(lr);
    whole.update(pw.a, m.a, v.a, d(g.a)), whole.update(pw.b, m.b, v.b, d(g.b)), whole.update(pw.c, m.c, v.c, d(g.c));
    whole.update(pw.d, m.d, v.d, d(g.d)), whole.update(pw.e, m.e, v.e, d(g.e));
    CHECK(same_bits(ps.a, pw.a) && same_bits(ps.b, pw.b) && same_bits(ps.c, pw.c) && same_bits(ps.d, pw.d) &&
          same_bits(ps.e, pw.e));
    CHECK(!same_bits(ps.a, before) && !same_bits(ps.e, before_e)); // (they moved)
    before = ps.a, before_e = ps.e;
  }
  // every rank holds the same parameters
  std::int64_t sums[2] = {0, 0};
  for (float x : ps.d) sums[0] += std::int64_t(std::bit_cast<std::uint32_t>(x));
  sums[1] = -sums[0];
  comm.allreduce(std::span(sums), dist::reduce_op::max);
  CHECK(sums[0] == -sums[1]);

  // misuse: a span that is not the bucket, an arena too small (before any collective starts)
  std::vector<float> wrong(7);
  CHECK(throws_containing([&] { sharded.start_bucket(0, wrong); }, "is not one of the step's 3 buckets"));
  CHECK(throws_containing([&] { sharded.update(1e-3f, as.first(16), dist::trained(ps.e, g.e)); },
                          "the arena has 16 bytes"));
}
} // namespace

int main(int argc, char** argv) {
  dist::mpi_communicator comm(argc, argv);
  try {
    sharded_against_whole(comm);
    if (comm.is_root()) std::printf("sharded_adam_test: %d checks passed on each of %d ranks\n", checks, comm.size());
  } catch (const std::exception& e) {
    comm.abort(e.what());
  }
  return 0;
}
