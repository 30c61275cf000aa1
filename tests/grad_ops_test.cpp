// The derivative of every differentiable elementwise entry of the op table (its `vjp`), generated from
// the table as the op tests are: evaluated by tenfold in float and double on the entry's test domain,
// against central finite differences of the entry's long-double reference (Richardson-extrapolated, so
// good to ~1e-13 relative where the function is smooth). Points where two step sizes disagree (a kink
// such as relu's at 0, a pole, the domain's edge) are skipped and counted; most points must be checked.
#include "op_test_support.hpp"

using namespace tenfold;

namespace {

// d/dx_k of Op's reference at `in` and how far it can be off, or NaN where no estimate is trustworthy.
// Steps are tried relative to max(|x|, 0.01), then to |x| alone (log near 0 needs a step below x); an
// estimate counts when halving the step changes it by less than 1e-11 of itself or than the rounding
// noise of the differences.
struct estimate {
  long double value, uncertainty;
};
template <class Op>
estimate finite_difference(std::array<long double, 3> in, int k) {
  const auto f = [&](long double v) {
    auto p = in;
    p[std::size_t(k)] = v;
    if constexpr (Op::arity == 1) return Op::reference(p[0]);
    else if constexpr (Op::arity == 2) return Op::reference(p[0], p[1]);
    else return Op::reference(p[0], p[1], p[2]);
  };
  const long double x = in[std::size_t(k)];
  // Fourth order: (8 (f(x+h) - f(x-h)) - (f(x+2h) - f(x-2h))) / 12h.
  const auto d = [&](long double h) { return (8 * (f(x + h) - f(x - h)) - (f(x + 2 * h) - f(x - 2 * h))) / (12 * h); };
  for (long double scale : {std::max(std::fabs(x), 1e-2L), std::fabs(x)}) {
    if (scale == 0) continue;
    for (long double rel : {1e-3L, 1e-4L, 1e-5L}) {
      const long double h = rel * scale, a = d(h), b = d(h / 2);
      if (!std::isfinite(a) || !std::isfinite(b)) continue;
      const long double noise = 4 * std::numeric_limits<long double>::epsilon() * (std::fabs(f(x + h)) + std::fabs(f(x - h))) / h;
      if (std::fabs(a - b) <= 1e-11L * std::fabs(b) + noise) return {b, std::fabs(a - b) + noise};
    }
  }
  return {NAN, NAN};
}

// Operand k's gradient from the entry, for inputs `x` (arity tensors), result y and incoming gradient g.
template <class Op, int K, class X, class Y, class G>
auto entry_vjp(const X& x, const Y& y, const G& g) {
  if constexpr (Op::arity == 1) return Op::vjp(x[0], y, g);
  else if constexpr (Op::arity == 2) return Op::template vjp<K>(x[0], x[1], y, g);
  else return Op::template vjp<K>(x[0], x[1], x[2], y, g);
}

template <class Op, class T, int K>
void check_operand(const std::array<Tensor<T, shape<97>>, 3>& x, const Tensor<T, shape<97>>& y,
                   const Tensor<T, shape<97>>& g) {
  using S = shape<97>;
  const auto expr = entry_vjp<Op, K>(x, y, g);
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(expr)>, ops::no_gradient>) {
    return; // where's condition
  } else {
    const Tensor<T, S> got = expr;
    // The rule computed in T: a few ulps of each term it adds (1 - y^2 near y = 1 loses y's digits).
    const long double tol = (std::is_same_v<T, float> ? 64.0L : 1024.0L) * std::numeric_limits<T>::epsilon();
    test::report rep{std::string(Op::name) + " d/d(operand " + std::to_string(K) + ") " + std::string(test::type_name<T>())};
    index_t skipped = 0;
    for (index_t i = 0; i < S::size; ++i) {
      std::array<long double, 3> in{};
      for (int k = 0; k < Op::arity; ++k) in[std::size_t(k)] = test::to_ld(x[std::size_t(k)](i));
      const estimate fd = finite_difference<Op>(in, K);
      const long double yi = test::to_ld(y(i)), gi = test::to_ld(g(i));
      if (std::isnan(fd.value) || !std::isfinite(yi)) {
        ++skipped;
        continue;
      }
      const long double want = gi * fd.value, have = test::to_ld(got(i));
      const long double scale = std::fabs(want) + std::fabs(gi) * (1 + std::fabs(in[std::size_t(K)]) + std::fabs(yi));
      const long double err = std::max(0.0L, std::fabs(have - want) - std::fabs(gi) * fd.uncertainty) / scale;
      ++rep.checked;
      if (err > rep.worst) rep.worst = err;
      if (!(err <= tol)) rep.fail(i, in.data(), Op::arity, have, want, err);
    }
    INFO(Op::name << ": " << skipped << " of " << S::size << " points skipped (no reliable finite difference)");
    CHECK(skipped <= S::size / 5);
    rep.finish();
  }
}

template <class Op, class T>
void check_entry() {
  using S = shape<97>; // odd: the SIMD body and the scalar tail
  std::mt19937_64 rng(test::seed_of(Op::name, "vjp", sizeof(T)));
  std::array<Tensor<T, S>, 3> x;
  for (int k = 0; k < Op::arity; ++k) {
    auto d = test::operand_domain<Op>(k);
    if constexpr (requires { Op::grad_test; }) { // an entry's own domain for derivative checks
      constexpr ops::test_spec s = Op::grad_test;
      d.lo = s.lo, d.hi = s.hi;
      if (k == Op::arity - 1 && s.hi2 > s.lo2) d.lo = s.lo2, d.hi = s.hi2;
    }
    d.specials = false;
    if (d.integral) d.integral = false; // derivatives are asked of real inputs
    for (index_t i = 0; i < S::size; ++i) x[std::size_t(k)](i) = test::draw<T>(d, rng);
  }
  Tensor<T, S> g;
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (index_t i = 0; i < S::size; ++i) g(i) = T((i % 2 ? -1 : 1) * u(rng));
  Tensor<T, S> y;
  if constexpr (Op::arity == 1) y = detail::make_map<Op>(x[0]);
  else if constexpr (Op::arity == 2) y = detail::make_map<Op>(x[0], x[1]);
  else y = detail::make_map<Op>(x[0], x[1], x[2]);
  check_operand<Op, T, 0>(x, y, g);
  if constexpr (Op::arity > 1) check_operand<Op, T, 1>(x, y, g);
  if constexpr (Op::arity > 2) check_operand<Op, T, 2>(x, y, g);
}

template <class List>
void check_all() {
  List::for_each([]<class Op>() {
    if constexpr (ops::has_vjp<Op>) {
      SECTION(std::string(Op::name)) {
        check_entry<Op, float>();
        check_entry<Op, double>();
      }
    }
  });
}
} // namespace

TEST_CASE("unary derivatives against finite differences", "[grad]") { check_all<ops::unary_ops>(); }
TEST_CASE("binary derivatives against finite differences", "[grad]") { check_all<ops::binary_ops>(); }
TEST_CASE("ternary derivatives against finite differences", "[grad]") { check_all<ops::ternary_ops>(); }

TEST_CASE("every elementwise entry without a derivative says why", "[grad]") {
  // The table's own static_assert (ops/table.hpp) requires it; here the reasons are read back.
  CHECK(ops::floor::no_derivative.find("piecewise constant") != std::string_view::npos);
  CHECK(ops::sign::no_derivative.find("piecewise constant") != std::string_view::npos);
  STATIC_REQUIRE(!ops::has_vjp<ops::eq>);
  STATIC_REQUIRE(ops::bool_valued<ops::isnan>());
  STATIC_REQUIRE(ops::has_vjp<ops::where>);
}
