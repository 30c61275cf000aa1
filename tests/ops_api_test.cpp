// The public API of the op table: every binary, bitwise and ternary entry called through its user-facing function
// (tenfold::name, and its operator where it has one), with each operand a number, a tensor or an expression,
// in every combination but all numbers; the values are checked against the entry's long-double reference.
// The function of an entry is reached through detail::public_function<Op>, which ops/api.hpp defines next
// to each function, so an entry without a function does not compile (and api.hpp's own check names it).
#include "op_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

namespace {
constexpr index_t n = 37; // two AVX2 float batches and a tail

enum class form { number, tensor, expression };
constexpr const char* form_name(form f) { return f == form::number ? "number" : f == form::tensor ? "tensor" : "expression"; }

// The element type the entry is tested in: int32 for the bitwise entries, which take no floats.
template <class Op>
using api_element_t = std::conditional_t<Op::op_category == ops::category::bitwise, std::int32_t, float>;

template <class T>
struct operands {
  std::vector<std::vector<T>> values;    // per operand, n values (tensor and expression operands)
  std::vector<Tensor<T, shape<n>>> tensors;
};

// Operand k in form F: the number s, the tensor, or an expression with the tensor's values (-(-x) is
// exact, and is a map node, not a leaf).
template <form F, class T>
decltype(auto) make_operand(const Tensor<T, shape<n>>& x, T s) {
  if constexpr (F == form::number) return s;
  else if constexpr (F == form::tensor) return (x);
  else return -(-x);
}

template <class Op, class T, bool Operator, form... F>
void check_call(const operands<T>& ops_in, const std::vector<T>& numbers) {
  constexpr form forms[] = {F...};
  std::string what = std::string(type_name<T>()) + (Operator ? " operator(" : " function(");
  for (std::size_t k = 0; k < sizeof...(F); ++k) what += (k ? ", " : "") + std::string(form_name(forms[k]));
  what += ") number " + show(to_ld(numbers[0]));
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    auto call = [&](auto&&... x) {
      if constexpr (Operator) return detail::public_operator<Op>::call(std::forward<decltype(x)>(x)...);
      else return detail::public_function<Op>::call(std::forward<decltype(x)>(x)...);
    };
    auto e = call(make_operand<F>(ops_in.tensors[K], numbers[K])...);
    Tensor<typename decltype(e)::value_type, shape<n>> out = e;
    std::vector<long double> in(std::size_t(n) * Op::arity);
    for (index_t o = 0; o < n; ++o)
      for (int k = 0; k < Op::arity; ++k)
        in[o * Op::arity + k] = to_ld(forms[k] == form::number ? numbers[k] : ops_in.values[k][o]);
    check_outputs<Op>(what, out.data(), n, in);
  }(std::make_index_sequence<sizeof...(F)>{});
}

// Every combination of forms for an entry of arity A (3^A of them), the all-number one left out.
template <class Op, class T, form... F>
void each_combination(const operands<T>& o, const std::vector<std::vector<T>>& numbers) {
  if constexpr (sizeof...(F) < Op::arity) {
    each_combination<Op, T, F..., form::number>(o, numbers);
    each_combination<Op, T, F..., form::tensor>(o, numbers);
    each_combination<Op, T, F..., form::expression>(o, numbers);
  } else if constexpr (((F == form::number) && ...)) {
  } else {
    for (const auto& s : numbers) {
      check_call<Op, T, false, F...>(o, s);
      if constexpr (detail::has_public_operator<Op>) check_call<Op, T, true, F...>(o, s);
    }
  }
}

template <class Op>
void check_entry() {
  using T = api_element_t<Op>;
  constexpr int A = Op::arity;
  std::mt19937_64 rng(seed_of(Op::name, "api"));
  const auto doms = domains<Op>();
  operands<T> o;
  o.values = make_values<T>(doms, std::vector<index_t>(A, n), fill::mixed, rng);
  o.tensors.resize(A);
  for (int k = 0; k < A; ++k) std::copy(o.values[k].begin(), o.values[k].end(), o.tensors[k].data());
  // The numbers: two draws from each operand's domain, and its special values (one operand's specials
  // at a time, the others drawn), so that every special value meets every form.
  std::vector<std::vector<T>> numbers;
  for (int r = 0; r < 2; ++r) {
    numbers.emplace_back();
    for (int k = 0; k < A; ++k) numbers.back().push_back(draw<T>(doms[k], rng));
  }
  for (int k = 0; k < A; ++k) {
    if (!doms[k].specials) continue;
    for (T s : special_values<T>(doms[k])) {
      numbers.push_back(numbers[0]);
      numbers.back()[k] = s;
    }
  }
  each_combination<Op, T>(o, numbers);
}
} // namespace

TEST_CASE("every binary op through its public function and operator, numbers, tensors and expressions", "[ops][api]") {
  ops::binary_ops::for_each([]<class Op>() { check_entry<Op>(); });
}

TEST_CASE("every bitwise op through its public function and operator, on int32", "[ops][api]") {
  ops::bitwise_ops::for_each([]<class Op>() { check_entry<Op>(); });
}

TEST_CASE("every ternary op through its public function, numbers, tensors and expressions", "[ops][api]") {
  ops::ternary_ops::for_each([]<class Op>() { check_entry<Op>(); });
}

TEST_CASE("numbers adopt the tensors' type; where's condition does not take part", "[ops][api]") {
  Tensor<std::int32_t, shape<4>> i{};
  Tensor<float, shape<4>> f{};
  Tensor<bool, shape<4>> c{};
  STATIC_REQUIRE(std::is_same_v<decltype(clamp(i, -1, 1))::value_type, std::int32_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(clamp(i, -1.0f, 1.0f))::value_type, float>); // a float number makes it float
  STATIC_REQUIRE(std::is_same_v<decltype(clamp(f, -1.0, 1.0))::value_type, float>);   // a double number does not widen
  STATIC_REQUIRE(std::is_same_v<decltype(where(f, i, 2))::value_type, std::int32_t>);  // the float condition is not typed
  STATIC_REQUIRE(std::is_same_v<decltype(where(c, 1, 2))::value_type, std::int32_t>);  // numbers alone: their own types
  STATIC_REQUIRE(std::is_same_v<decltype(where(c, 1.0f, 0))::value_type, float>);
  STATIC_REQUIRE(std::is_same_v<decltype(where(c, std::int64_t(1), 0))::value_type, std::int64_t>);
  // The cases of issue 13, with a bool condition.
  for (int k = 0; k < 4; ++k) i(k) = k - 2, f(k) = 0.75f * float(k) - 1.25f, c(k) = k % 2 == 1;
  Tensor<float, shape<4>> a = clamp(i, -1.0f, 0.5f), b = where(c, 1.0f, f), d = where(c, 1.0f, 0.0f), e = lerp(f, 0.5f, f * 2.0f);
  Tensor<std::int32_t, shape<4>> g = where(c, 7, i);
  for (int k = 0; k < 4; ++k) {
    const long double x = i(k), y = f(k);
    CHECK(a(k) == float(std::min(std::max(x, -1.0L), 0.5L)));
    CHECK(b(k) == float(c(k) ? 1.0L : y));
    CHECK(d(k) == float(c(k) ? 1.0L : 0.0L));
    CHECK(e(k) == float(y + 2 * y * (0.5L - y)));
    CHECK(g(k) == (c(k) ? 7 : i(k)));
  }
}
