// Compile-time rewrites: the expression types are checked with std::is_same, the values against the
// unrewritten arithmetic.
#include <atomic>
#include <bit>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

#include "../tools/tune/common.hpp" // (prepared_for: the node the tool times variants on)

using namespace tenfold;

namespace {
Tensor<float, shape<4, 6>> x;
Tensor<float, shape<6, 5>> w;
Tensor<std::int32_t, shape<4, 6>> n;
template <class A, class B>
constexpr bool same = std::is_same_v<detail::node_t<A>, detail::node_t<B&>>; // B&: a named tensor is referenced
} // namespace

// x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0, x ** 1: the operand itself.
static_assert(same<decltype(x * literal<1>), decltype(x)>);
static_assert(same<decltype(literal<1.0f> * x), decltype(x)>);
static_assert(same<decltype(x / literal<1>), decltype(x)>);
static_assert(same<decltype(x + literal<0>), decltype(x)>);
static_assert(same<decltype(literal<0.0f> + x), decltype(x)>);
static_assert(same<decltype(x - literal<0>), decltype(x)>);
static_assert(same<decltype(pow(x, literal<1>)), decltype(x)>);
static_assert(same<decltype(exp(x) * literal<1> + literal<0>), decltype(exp(x))>);
// x ** 2 is square(x); other literals stay an ordinary multiply.
static_assert(same<decltype(pow(x, literal<2>)), decltype(square(x))>);
static_assert(!same<decltype(x * literal<2>), decltype(x)>);
// Not when it would change the element type: an int tensor times a float 1 is a float expression.
static_assert(!same<decltype(n * literal<1.0f>), decltype(n)>);
static_assert(same<decltype(n * literal<1>), decltype(n)>);
// 0 - x is not x.
static_assert(!same<decltype(literal<0> - x), decltype(x)>);

// Views: a transpose of a transpose, a reshape of a reshape and an identity permute are no view at
// all, on tensors (folded into strides) and on computed values (composed index maps) alike.
static_assert(same<decltype(transpose(transpose(x))), decltype(x)>);
static_assert(same<decltype(permute<0, 1>(x)), decltype(x)>);
static_assert(same<decltype(reshape<4, 6>(reshape<24>(x))), decltype(x)>);
static_assert(same<decltype(reshape<2, 12>(reshape<3, 8>(x))), decltype(reshape<2, 12>(x))>);
static_assert(same<decltype(transpose(transpose(matmul(x, w)))), decltype(matmul(x, w))>);
static_assert(same<decltype(reshape<4, 5>(reshape<20>(matmul(x, w)))), decltype(matmul(x, w))>);
static_assert(same<decltype(permute<1, 0>(permute<1, 0>(sum(x, axis<1>, keepdims)))), decltype(sum(x, axis<1>, keepdims))>);
// Two slices of a computed value compose into one view.
static_assert(same<decltype(slice<range<1, 3>>(slice<range<1, 4>>(matmul(x, w)))), decltype(slice<range<2, 4>>(matmul(x, w)))>);

TEST_CASE("rewritten expressions compute what they stand for", "[rewrite]") {
  rng g(31);
  x = normal<shape<4, 6>>(g);
  w = normal<shape<6, 5>>(g);
  Tensor<float, shape<4, 6>> a = exp(x) * literal<1> + literal<0>, b = exp(x);
  CHECK(std::equal(a.begin(), a.end(), b.begin()));
  Tensor<float, shape<4, 6>> p = pow(x, literal<2>), s = x * x;
  CHECK(std::equal(p.begin(), p.end(), s.begin()));
  Tensor<float, shape<4, 6>> d = x * literal<2> - literal<0.5f>;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) CHECK(d(i, j) == 2 * x(i, j) - 0.5f);
  Tensor<float, shape<2, 5>> sl = slice<range<1, 3>>(slice<range<1, 4>>(matmul(x, w)));
  Tensor<float, shape<4, 5>> m = matmul(x, w);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j) CHECK(sl(i, j) == m(i + 2, j));
  Tensor<float, shape<5, 4>> t = transpose(matmul(x, w) * literal<1>);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) CHECK(t(j, i) == m(i, j));
}

// Online softmax: the plain definition of log_softmax keeps its form, (x - max) - log Σ exp(x - max), but
// its two row constants are the halves of one shifted log-sum-exp accumulation (max and sum in one
// pass), which a row computes once: plan/same_reductions.hpp counts both as that accumulation. (softmax keeps its
// definition: measured, its exp(x - max) computed once per element and kept in the output row
// (cpu/row_tee.hpp) beats exp(x - lse), which takes two exps per element.)
namespace {
using X = detail::node_t<decltype(x)&>;
constexpr auto last_axis = detail::canon(std::array<bool, 2>{false, true});
using lse_t = detail::reduce_node<ops::shifted_logsumexp, X, last_axis, true>;
using max_part_t = detail::reduce_node<ops::shifted_logsumexp_part<ops::lse_part::max>, X, last_axis, true>;
using log_sum_part_t = detail::reduce_node<ops::shifted_logsumexp_part<ops::lse_part::log_sum>, X, last_axis, true>;
} // namespace
static_assert(same<decltype(log_softmax(x)), decltype((x - std::declval<max_part_t>()) - std::declval<log_sum_part_t>())>);
static_assert(same<plan::shared_accumulation_t<max_part_t>, lse_t> && same<plan::shared_accumulation_t<log_sum_part_t>, lse_t>);
// softmax keeps exp(x - max) (accuracy: see ops/rewrite.hpp); its division by the row sum becomes one
// reciprocal per row and a multiply per element. Rows of 6 floats are short enough for the two-pass form
// on every machine (the online form wins, where it does, on rows past L1: tools/tune).
static_assert(!same<decltype(softmax(x)), decltype(exp(x - std::declval<lse_t>()))>);
static_assert(same<decltype(softmax(x)), decltype(exp(x - max(x, axis<-1>, keepdims)) *
                                                  reciprocal(sum(exp(x - max(x, axis<-1>, keepdims)), axis<-1>, keepdims)))>);
// Its two forms, whatever the table says: the definition, and exp(x - M) * (1 / S) with M and S the
// max and the sum parts of one accumulation.
namespace {
using last_mask = detail::mask_holder<last_axis>;
using sum_part_t = detail::reduce_node<ops::shifted_logsumexp_part<ops::lse_part::sum>, X, last_axis, true>;
} // namespace
static_assert(same<decltype(detail::softmax_two_pass<last_mask>(std::declval<X>())), decltype(softmax(x))>);
static_assert(same<decltype(detail::softmax_online<last_mask>(std::declval<X>())),
                   decltype(exp(x - std::declval<max_part_t>()) * reciprocal(std::declval<sum_part_t>()))>);
static_assert(same<plan::shared_accumulation_t<sum_part_t>, lse_t>);
static_assert(plan_of<decltype(detail::softmax_online<last_mask>(std::declval<X>()))>::nests == 1);
// The choice: online from the configured row length on, never where it is 0 (the default).
static_assert(!detail::softmax_online_for(index_t(1) << 30, softmax_config{}));
static_assert(!detail::softmax_online_for(4095, {.online_from_bytes = 4096}) &&
              detail::softmax_online_for(4096, {.online_from_bytes = 4096}));
static_assert(plan_of<decltype(log_softmax(x))>::nests == 1 && plan_of<decltype(log_softmax(x))>::buffers == 0);

TEST_CASE("online log_softmax, and softmax with exp kept in the row, give the definition's values", "[rewrite]") {
  rng g(32);
  Tensor<float, shape<5, 3000>> v = normal<shape<5, 3000>>(g, 0.0f, 30.0f);
  v(1, 7) = -std::numeric_limits<float>::infinity();
  v(2, 2999) = std::numeric_limits<float>::infinity(); // the definition gives NaN for the whole row
  v(3, 100) = std::numeric_limits<float>::quiet_NaN();
  Tensor<float, shape<5, 3000>> p = softmax(v), lp = log_softmax(v);
  for (int i = 0; i < 5; ++i) {
    long double m = -INFINITY, s = 0;
    for (int j = 0; j < 3000; ++j) m = std::isnan(v(i, j)) || v(i, j) > m ? v(i, j) : m;
    for (int j = 0; j < 3000; ++j) s += std::exp((long double)v(i, j) - m);
    int bad = 0;
    for (int j = 0; j < 3000; ++j) {
      const long double want = std::exp((long double)v(i, j) - m) / s, want_log = (long double)v(i, j) - m - std::log(s);
      if (std::isnan(want)) bad += !std::isnan(p(i, j)) + !std::isnan(lp(i, j));
      else {
        bad += !(std::abs(p(i, j) - want) <= 1e-6 * want + 1e-30);
        if (std::isinf(want_log)) bad += lp(i, j) != want_log;
        else bad += !(std::abs(lp(i, j) - want_log) <= 1e-5 * (1 + std::abs(want_log)));
      }
    }
    CHECK(bad == 0);
  }
  CHECK(p(1, 7) == 0.0f);
  // Long rows (beyond L1), large logits: relative accuracy ~1e-6 (exp(x - lse) would give ~1e-5).
  Tensor<float, shape<3, 9000>> w = normal<shape<3, 9000>>(g, 0.0f, 30.0f);
  w(1, 8999) = std::numeric_limits<float>::infinity();
  Tensor<float, shape<3, 9000>> pw = softmax(w);
  for (int i = 0; i < 3; ++i) {
    long double m = -INFINITY, s = 0;
    for (int j = 0; j < 9000; ++j) m = std::max<long double>(m, w(i, j));
    for (int j = 0; j < 9000; ++j) s += std::exp((long double)w(i, j) - m);
    int bad = 0;
    for (int j = 0; j < 9000; ++j) {
      const long double want = std::exp((long double)w(i, j) - m) / s;
      bad += std::isnan(want) ? !std::isnan(pw(i, j)) : !(std::abs(pw(i, j) - want) <= 1e-6 * want + 1e-30);
    }
    CHECK(bad == 0);
  }
}

// softmax's two forms (ops/softmax_config.hpp) against long double, on rows of C floats (SIMD tails, rows
// past L1) with ±inf and NaN: the definition's values and IEEE cases from either.
template <int C>
void check_softmax_forms() {
  using S = shape<4, C>;
  rng g(40 + C);
  Tensor<float, S> v = normal<S>(g, 0.0f, 30.0f);
  v(1, C / 2) = -std::numeric_limits<float>::infinity();
  v(2, C - 1) = std::numeric_limits<float>::infinity(); // NaN for the whole row
  v(3, 0) = std::numeric_limits<float>::quiet_NaN();
  using last = detail::mask_holder<detail::canon(std::array<bool, 2>{false, true})>;
  Tensor<float, S> two = detail::softmax_two_pass<last>(detail::as_node(v)),
                   online = detail::softmax_online<last>(detail::as_node(v)), chosen = softmax(v);
  for (int i = 0; i < 4; ++i) {
    long double m = -INFINITY, s = 0;
    for (int j = 0; j < C; ++j) m = std::isnan(v(i, j)) || v(i, j) > m ? v(i, j) : m;
    for (int j = 0; j < C; ++j) s += std::exp((long double)v(i, j) - m);
    int bad = 0;
    for (int j = 0; j < C; ++j) {
      const long double want = std::exp((long double)v(i, j) - m) / s;
      // x - max rounds at its own scale: a relative error of |x - max| 2^-24 in exp, and a few ulps more
      const long double tol =
          (std::isinf(v(i, j)) ? 0 : want * 2e-7 * (4 + std::abs((long double)v(i, j) - m))) + 1e-30;
      for (float got : {two(i, j), online(i, j), chosen(i, j)})
        bad += std::isnan(want) ? !std::isnan(got) : !(std::abs(got - want) <= tol);
    }
    INFO("row " << i << " of " << C);
    CHECK(bad == 0);
  }
  if (C > 1) CHECK(online(1, C / 2) == 0.0f);
}
TEST_CASE("softmax's two-pass and online forms give the definition's values", "[rewrite]") {
  check_softmax_forms<1>();
  check_softmax_forms<17>();
  check_softmax_forms<1000>();
  check_softmax_forms<9000>(); // past L1, blocks of 1024 merged
}
// The table (tools/tune --write-softmax): one entry per machine, each a length the tool measures or 0.
TEST_CASE("softmax's tuned table", "[rewrite][tune]") {
  for (const auto& e : tuned::softmax_cpu) {
    INFO(e.machine.isa << " " << e.machine.l1d_kib << " KiB L1d, " << e.machine.l2_kib << " KiB L2, " << e.machine.cores
                       << " cores");
    const index_t b = e.config.online_from_bytes;
    CHECK((b == 0 || (b >= 1024 && b <= (index_t(256) << 10) && std::has_single_bit(std::uint64_t(b)))));
    int same_key = 0;
    for (const auto& f : tuned::softmax_cpu) same_key += f.machine == e.machine;
    CHECK(same_key == 1);
  }
  if (build_machine.cores == 0) CHECK(detail::softmax_config_for() == softmax_config{});
}

// Issue 13: x - lse(x) rounded lse = max + log Σ at the scale of the row's max: 2.1e-4 relative error on
// rows spanning ±1e4, 3.9e-5 on rows near 100. (x - max) - log Σ rounds x - max (exact near the max) and
// the log at their own scales: the error is a few units of 2^-24 (|x - max| + log Σ + 1).
TEST_CASE("log_softmax rounds at the scale of x - max, not of the row's max", "[rewrite]") {
  rng g(34);
  constexpr index_t C = 1000;
  Tensor<float, shape<4, C>> wide = uniform<shape<4, C>>(g, -1e4f, 1e4f); // rows spanning ±1e4
  Tensor<float, shape<4, C>> near = normal<shape<4, C>>(g, 100.0f, 10.0f); // rows near 100
  for (const auto* v : {&wide, &near}) {
    Tensor<float, shape<4, C>> lp = log_softmax(*v);
    for (int i = 0; i < 4; ++i) {
      long double m = -INFINITY, s = 0;
      for (index_t j = 0; j < C; ++j) m = std::max<long double>(m, (*v)(i, j));
      for (index_t j = 0; j < C; ++j) s += std::exp((long double)(*v)(i, j) - m);
      long double worst = 0;
      for (index_t j = 0; j < C; ++j) {
        const long double d = (long double)(*v)(i, j) - m, want = d - std::log(s);
        // float's unit roundoff is 2^-24: roundings of x - max, of the log and of the result, each at its own
        // scale, and of the float sum Σ, which moves the log by its relative error (the 1).
        worst = std::max(worst, std::fabs(lp(i, j) - want) / (std::ldexp(1.0L, -24) * (std::fabs(d) + std::log(s) + 1)));
      }
      INFO("row " << i << " of the " << (v == &wide ? "±1e4" : "near 100") << " rows: worst error " << worst
                  << " units of 2^-24 (|x - max| + log sum + 1)");
      CHECK(worst <= 4);
    }
  }
}

TEST_CASE("softmax computing exp once per element gives the two-pass evaluation's bits", "[rewrite]") {
  rng g(33);
  Tensor<float, shape<7, 2500>> v = normal<shape<7, 2500>>(g, 0.0f, 5.0f);
  v(4, 3) = -std::numeric_limits<float>::infinity();
  // `* 1.0f` (a run-time scalar, not a literal) hides the pattern: the plain two-pass row evaluation.
  Tensor<float, shape<7, 2500>> once = softmax(v), twice = softmax(v) * 1.0f;
  CHECK(std::equal(once.begin(), once.end(), twice.begin()));
  Tensor<float, shape<7, 2500>> e = exp(v - max(v, axis<1>, keepdims));
  for (int i = 0; i < 7; ++i) {
    double s = 0;
    for (int j = 0; j < 2500; ++j) s += e(i, j);
    for (int j = 0; j < 2500; j += 97) CHECK(once(i, j) == Approx(e(i, j) / s).epsilon(1e-5));
  }
}

// An output beyond cpu::rows_streaming_bytes runs whole rows per thread with E in a stack row and each row's
// stores interleaved with the next row's exp sweep (cpu/row_tee.hpp). Rows of 3001 (not a multiple of
// the vector width: the scalar tail is finished position by position too) must give the bits of the
// same rows evaluated as a small tensor, for any split over threads. (The threshold is the machine's,
// tuned/elementwise_cpu.hpp: 8 MiB by default, at most 64 MiB, so as many rows as just pass it.)
TEST_CASE("softmax of a streamed output: pipelined rows give the single-row bits", "[rewrite][determinism]") {
  constexpr index_t cols = 3001, rows = cpu::rows_streaming_bytes / (cols * index_t(sizeof(float))) + 1;
  static_assert(rows * cols * index_t(sizeof(float)) >= cpu::rows_streaming_bytes);
  using S = shape<rows, cols>;
  rng g(34);
  Tensor<float, S> v = normal<S>(g, 0.0f, 20.0f);
  v(5, 0) = -std::numeric_limits<float>::infinity();
  v(6, cols - 1) = std::numeric_limits<float>::infinity(); // NaN row (the definition's inf - inf)
  v(rows - 1, 17) = 1e4f;
  Tensor<float, S> p = softmax(v);
  int bad = 0;
  for (index_t i = 0; i < rows; i += 1 + (i < 8 ? 0 : 37)) {
    Tensor<float, shape<1, cols>> one;
    for (index_t j = 0; j < cols; ++j) one(0, j) = v(i, j);
    Tensor<float, shape<1, cols>> q = softmax(one);
    for (index_t j = 0; j < cols; ++j) bad += !(std::bit_cast<std::uint32_t>(q(0, j)) == std::bit_cast<std::uint32_t>(p(i, j)));
    long double m = -INFINITY, s = 0;
    for (index_t j = 0; j < cols; ++j) m = std::max<long double>(m, v(i, j));
    for (index_t j = 0; j < cols; ++j) s += std::exp((long double)v(i, j) - m);
    for (index_t j = 0; j < cols; ++j) {
      // x - max rounds to float: a relative error of |x - max| * 2^-24 in exp, plus a few roundings.
      const long double shift = (long double)v(i, j) - m, want = std::exp(shift) / s;
      const long double tol = (8 + std::abs(shift)) * 6e-8L * want + 1e-38L;
      if (std::isnan(want)) bad += !std::isnan(p(i, j));
      else if (std::isinf(shift)) bad += p(i, j) != 0.0f;
      else bad += !(std::abs(p(i, j) - want) <= tol);
    }
  }
  CHECK(bad == 0);
  CHECK(p(5, 0) == 0.0f);
  CHECK(std::isnan(p(6, 0)));
  CHECK(p(rows - 1, 17) == 1.0f);
}

// The tee is recognised from the types, and two tensors of one type look alike: exp(a) over the row sum
// of exp(b) must divide by b's sums, not by the sums of the values it just computed from a. Both the
// row-at-a-time path (small) and the whole-rows path (streamed output) are checked against double loops.
template <index_t Rows, index_t Cols>
void check_other_tensors_sum() {
  using S = shape<Rows, Cols>;
  rng g(35);
  Tensor<float, S> a = normal<S>(g, 0.0f, 1.0f), b = normal<S>(g, 2.0f, 1.0f);
  Tensor<float, S> r = exp(a) / sum(exp(b), axis<1>, keepdims);
  Tensor<float, S> same = exp(a) / sum(exp(a), axis<1>, keepdims); // the tee: still right
  int bad = 0;
  for (index_t i = 0; i < Rows; i += 1 + Rows / 16) {
    double sb = 0, sa = 0;
    for (index_t j = 0; j < Cols; ++j) {
      sb += std::exp(double(b(i, j)));
      sa += std::exp(double(a(i, j)));
    }
    for (index_t j = 0; j < Cols; j += 7) {
      bad += !(std::abs(r(i, j) - std::exp(double(a(i, j))) / sb) <= 1e-5 * std::exp(double(a(i, j))) / sb);
      bad += !(std::abs(same(i, j) - std::exp(double(a(i, j))) / sa) <= 1e-5 * std::exp(double(a(i, j))) / sa);
    }
  }
  CHECK(bad == 0);
}
TEST_CASE("a row sum over another tensor of the same type is not taken for the tail's own values", "[rewrite]") {
  check_other_tensors_sum<6, 1000>();
  check_other_tensors_sum<720, 3001>(); // streamed output: whole rows per thread
}

// The tee must be taken, not only be right: E is computed once per element. An exp that counts its
// calls (elements, by the vector or one by one) sees rows x cols of them with the tee, twice that
// without. (The tee once compared the two subtrees byte by byte, padding included, and was silently
// off wherever the nodes were built on the stack: softmax ran at half its speed with correct values.)
namespace {
std::atomic<long> counted_exp_elements{0};
struct counted_exp : ops::unary<counted_exp, ops::category::floating> {
  static constexpr std::string_view name = "counted_exp";
  template <class T> TENFOLD_HD static T scalar(T x) {
    counted_exp_elements.fetch_add(1, std::memory_order_relaxed);
    return std::exp(x);
  }
  template <class B> static B simd(const B& x) {
    counted_exp_elements.fetch_add(long(B::size), std::memory_order_relaxed);
    return ops::exp::simd(x);
  }
};
template <index_t Rows, index_t Cols>
void check_tee_taken() {
  using S = shape<Rows, Cols>;
  rng g(36);
  Tensor<float, S> x = normal<S>(g, 0.0f, 3.0f), y;
  auto e = [&] { return apply<counted_exp>(x - max(x, axis<1>, keepdims)); };
  counted_exp_elements = 0;
  y = e() / sum(e(), axis<1>, keepdims);
  CHECK(counted_exp_elements.load() == Rows * Cols);
  double s = 0;
  for (index_t j = 0; j < Cols; ++j) s += y(Rows - 1, j);
  CHECK(s == Approx(1.0).epsilon(1e-5));
}
} // namespace
TEST_CASE("the tee computes the row's values once", "[rewrite]") {
  check_tee_taken<6, 1003>();  // a row at a time
  check_tee_taken<720, 3001>(); // streamed output: whole rows per thread, pipelined
}

// A row's reductions are remembered while the row is evaluated (cpu/row_memo.hpp): two subtrees that
// reduce the same operands share one sweep. Look-alike reductions (same type, other tensor) must not
// share it, and nothing may outlive the row: a second evaluation after the input changed, and an
// assignment in place, see the new values. Checked against double loops.
template <index_t Rows, index_t Cols>
void check_row_memo() {
  using S = shape<Rows, Cols>;
  rng g(36);
  Tensor<float, S> a = normal<S>(g, 1.0f, 2.0f), b = normal<S>(g, -3.0f, 0.5f);
  auto row_mean = [](const Tensor<float, S>& t, index_t i) {
    double s = 0;
    for (index_t j = 0; j < Cols; ++j) s += t(i, j);
    return s / Cols;
  };
  int bad = 0;
  auto expect = [&](const Tensor<float, S>& got, auto&& want) {
    for (index_t i = 0; i < Rows; i += 1 + Rows / 16)
      for (index_t j = 0; j < Cols; j += 5) bad += !(std::abs(got(i, j) - want(i, j)) <= 1e-4 * (1 + std::abs(want(i, j))));
  };
  // Look-alikes: mean(a) and mean(b) have one type.
  Tensor<float, S> r = (a - mean(a, axis<1>, keepdims)) * (b - mean(b, axis<1>, keepdims));
  std::vector<double> ma(Rows), mb(Rows);
  for (index_t i = 0; i < Rows; ++i) ma[i] = row_mean(a, i), mb[i] = row_mean(b, i);
  expect(r, [&](index_t i, index_t j) { return (a(i, j) - ma[i]) * (b(i, j) - mb[i]); });
  // layer_norm: mean(x) read by the tail and by the variance.
  const auto gain = ones<float, shape<Cols>>();
  const auto shift = zeros<float, shape<Cols>>();
  // (Each row's mean and variance once: the check also runs under the sanitizers.)
  auto ln_want = [&](const Tensor<float, S>& t) {
    std::vector<double> m(Rows), rstd(Rows);
    for (index_t i = 0; i < Rows; ++i) {
      m[i] = row_mean(t, i);
      double v = 0;
      for (index_t k = 0; k < Cols; ++k) v += (t(i, k) - m[i]) * (t(i, k) - m[i]);
      rstd[i] = 1 / std::sqrt(v / Cols + 1e-5);
    }
    return [&t, m, rstd](index_t i, index_t j) { return (t(i, j) - m[i]) * rstd[i]; };
  };
  Tensor<float, S> y = layer_norm(a, gain, shift);
  expect(y, ln_want(a));
  // The same expression again after its input changed: no value survives from the first evaluation.
  a = a * 3.0f + 7.0f;
  y = layer_norm(a, gain, shift);
  expect(y, ln_want(a));
  // In place: the row's reductions are all taken before its stores begin.
  Tensor<float, S> before = a;
  a = layer_norm(a, gain, shift);
  expect(a, ln_want(before));
  CHECK(bad == 0);
}
TEST_CASE("a row's repeated reductions are computed once, and only for the same operands", "[rewrite]") {
  check_row_memo<6, 1000>();
  check_row_memo<96, 20000>(); // large enough for the thread pool and streamed stores
}

// The streaming threshold's tuned table (tools/tune --write-elementwise): one entry per machine, each
// within the sizes the tool measures, and the evaluator's threshold is the build machine's entry or the
// default.
TEST_CASE("the elementwise evaluator's tuned table", "[rewrite][tune]") {
  for (const auto& e : tuned::elementwise_cpu) {
    INFO(e.machine.isa << " " << e.machine.l1d_kib << " KiB L1d, " << e.machine.l2_kib << " KiB L2, " << e.machine.cores
                       << " cores");
    CHECK((e.config.streaming_bytes >= (index_t(2) << 20) && e.config.streaming_bytes <= (index_t(64) << 20)));
    CHECK((e.config.rows_streaming_bytes == 0 || // (0: as streaming_bytes; else as tools/tune/rows_streaming.hpp measures)
           (e.config.rows_streaming_bytes >= (index_t(4) << 20) && e.config.rows_streaming_bytes <= (index_t(64) << 20))));
    CHECK(e.machine.cores >= 1);
    int same_key = 0;
    for (const auto& f : tuned::elementwise_cpu) same_key += f.machine == e.machine;
    CHECK(same_key == 1);
  }
  for (const auto& e : tuned::elementwise_cpu) { // the row kernels' prefetch: as tools/tune/rows.hpp searches it
    for (const cpu::row_prefetch_config& p : {e.config.tee, e.config.tail}) {
      CHECK((p.ahead >= 0 && p.ahead <= 2));
      CHECK((p.l1_bytes >= 0 && p.l1_bytes <= (index_t(128) << 10)));
    }
    CHECK((e.config.tee_pipeline_from_bytes == cpu::elementwise_config{}.tee_pipeline_from_bytes ||
           (e.config.tee_pipeline_from_bytes >= (index_t(1) << 10) && e.config.tee_pipeline_from_bytes <= (index_t(128) << 10))));
  }
  STATIC_REQUIRE(cpu::streaming_bytes == cpu::elementwise_config_for().streaming_bytes);
  STATIC_REQUIRE(cpu::rows_streaming_bytes == cpu::elementwise_config_for().rows_streaming());
  STATIC_REQUIRE(cpu::elementwise_config{.streaming_bytes = 3}.rows_streaming() == 3); // (unset: the flat threshold)
  STATIC_REQUIRE(cpu::elementwise_config{.streaming_bytes = 3, .rows_streaming_bytes = 5}.rows_streaming() == 5);
  if (build_machine.cores == 0) // a build that does not say its machine gets the default
    CHECK(cpu::streaming_bytes == cpu::elementwise_config{}.streaming_bytes);
}

// The row kernels' prefetch variants (cpu/elementwise_config.hpp: row_prefetch_config for the tee and
// the tail), run as tools/tune times them (cpu::run_elementwise_with on the prepared node): every one
// writes the defaults' bits, on softmax (the tee), layer_norm and rms_norm (the tail sweep), row by row
// and over the pool, streamed (streaming_bytes 0: the pipelined tee rows), pipelined without streaming,
// and on bounded rows.
namespace {
template <cpu::elementwise_config C, class Y, class E>
void eval_configured(Y& y, E&& e) {
  const auto [dst, prepared] = tune::prepared_for(y, std::forward<E>(e));
  cpu::run_elementwise_with<C>(dst, prepared);
}
constexpr cpu::row_prefetch_config none{.ahead = 0}, two_l2_dst{.ahead = 2, .l1_bytes = 0, .dst = true},
                                   one_l1_dst{.ahead = 1, .l1_bytes = index_t(1) << 40, .dst = true};
constexpr cpu::elementwise_config prefetch_variants[] = {
    {.tee = none, .tail = none},
    {.tee = two_l2_dst, .tail = two_l2_dst},
    {.tee = one_l1_dst, .tail = {.ahead = 2}},
    {.streaming_bytes = 0, .tee = two_l2_dst, .tail = one_l1_dst},
    {.streaming_bytes = 0, .tee = none, .tail = none},
    {.tee_pipeline_from_bytes = 0, .tee = one_l1_dst, .tail = none}, // softmax's rows pipelined, not streamed
};
template <class S, class B>
int prefetch_variant_mismatches(Tensor<float, S>& x, const B& gamma, const B& beta) {
  Tensor<float, S> want, got;
  if constexpr (S::has_bounded) want.set_length(x.length()), got.set_length(x.length());
  index_t count = S::size;
  if constexpr (S::has_bounded) count = x.length() * S::dims[1];
  int bad = 0;
  auto compare = [&] {
    for (index_t i = 0; i < count; ++i)
      bad += std::bit_cast<std::uint32_t>(want.data()[i]) != std::bit_cast<std::uint32_t>(got.data()[i]);
  };
  auto each = [&](auto expr) {
    want = expr();
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((std::fill(got.data(), got.data() + S::size, -1.0f), eval_configured<prefetch_variants[I]>(got, expr()), compare()), ...);
    }(std::make_index_sequence<std::size(prefetch_variants)>{});
  };
  each([&] { return softmax(x); });
  each([&] { return layer_norm(x, gamma, beta, 1e-5f); });
  each([&] { return rms_norm(x, gamma, 1e-5f); });
  return bad;
}
} // namespace
TEST_CASE("the row kernels' prefetch and pipeline variants write the defaults' bits", "[rewrite][tune][determinism]") {
  rng g(36);
  {
    Tensor<float, shape<5, 1000>> x = normal<shape<5, 1000>>(g, 0.0f, 4.0f);
    Tensor<float, shape<1000>> gamma = normal<shape<1000>>(g, 1.0f, 0.5f), beta = normal<shape<1000>>(g, 0.0f, 0.5f);
    CHECK(prefetch_variant_mismatches(x, gamma, beta) == 0);
  }
  {
    using S = shape<37, 3001>; // over the pool, with a scalar tail
    auto x = std::make_unique<Tensor<float, S>>(normal<S>(g, 0.0f, 4.0f));
    Tensor<float, shape<3001>> gamma = normal<shape<3001>>(g, 1.0f, 0.5f), beta = normal<shape<3001>>(g, 0.0f, 0.5f);
    CHECK(prefetch_variant_mismatches(*x, gamma, beta) == 0);
  }
  {
    Tensor<float, shape<upto<64>, 1000>> x;
    x.set_length(37);
    for (index_t i = 0; i < 37 * 1000; ++i) x.data()[i] = float(i % 977) * 0.01f - 4.0f;
    Tensor<float, shape<1000>> gamma = normal<shape<1000>>(g, 1.0f, 0.5f), beta = normal<shape<1000>>(g, 0.0f, 0.5f);
    CHECK(prefetch_variant_mismatches(x, gamma, beta) == 0);
  }
}
