// Integer ops against NumPy. The bitwise entries of the op table (ops::bitwise_ops) on int32, int64 and bool,
// generated from the table as the other op tests are; then every integer op, through its public function
// and operator and through its scalar function alone (what vector tails and CUDA kernels run), against
// the values NumPy computed for the same operands (tests/data/numpy_int_ops.inc, written by
// numpy_int_ops.py): edge values (0, ±1, min, max) in every pair, wrapping overflow, division by 0 and
// INT_MIN // -1, shift counts out of range; floor_divide and remainder on float32 and float64 as well.
#include "op_test_support.hpp"

#include <sstream>

using namespace tenfold;
using namespace tenfold::test;

namespace {
template <class Op, class T>
void bitwise_layouts() {
  contiguous_case<Op, T, 33>(fill::mixed);
  contiguous_case<Op, T, 33>(fill::cartesian);
  strided_case<Op, T>();
  broadcast_case<Op, T>();
  if constexpr (Op::arity >= 2) scalar_case<Op, T>();
}
} // namespace

TEST_CASE("bitwise ops from the table: int32, int64 and bool, every layout", "[ops][bitwise]") {
  ops::bitwise_ops::for_each([]<class Op>() {
    bitwise_layouts<Op, std::int32_t>();
    bitwise_layouts<Op, std::int64_t>();
    contiguous_case<Op, bool, 33>(fill::cartesian);
  });
}

// ---- against NumPy ---------------------------------------------------------------------------------
namespace {
template <class T>
struct numpy_table;
constexpr float inf32 = std::numeric_limits<float>::infinity(), nan32 = std::numeric_limits<float>::quiet_NaN();
constexpr double inf64 = std::numeric_limits<double>::infinity(), nan64 = std::numeric_limits<double>::quiet_NaN();
#include "data/numpy_int_ops.inc"

template <class T>
bool same_value(T got, T expected) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(expected)) return std::isnan(got);
    return got == expected && std::signbit(got) == std::signbit(expected);
  } else {
    return got == expected;
  }
}

template <class T, std::size_t N>
Tensor<T, shape<index_t(N)>> tensor(const T (&v)[N]) {
  Tensor<T, shape<index_t(N)>> t;
  std::copy(std::begin(v), std::end(v), t.data());
  return t;
}

// `e` evaluated, and Op's scalar function on the same operands, against NumPy's `expected`.
template <class Op, class U, std::size_t N, class E, class... T>
void expect_numpy(const char* how, E&& e, const U (&expected)[N], const T*... in) {
  using R = typename std::remove_cvref_t<E>::value_type;
  STATIC_REQUIRE(std::is_same_v<R, U>);
  const Tensor<U, shape<index_t(N)>> got = std::forward<E>(e);
  int bad = 0, bad_scalar = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < N; ++i) {
    const U scalar = convert<U>(Op::template apply<U>(static_cast<compute_t<T>>(in[i])...));
    const bool ok = same_value(got.data()[i], expected[i]), ok_scalar = same_value(scalar, expected[i]);
    bad += !ok, bad_scalar += !ok_scalar;
    if ((!ok || !ok_scalar) && bad + bad_scalar <= 8) {
      first << "\n  [" << i << "] (";
      ((first << show(to_ld(in[i])) << " "), ...);
      first << "): evaluated " << show(to_ld(got.data()[i])) << ", scalar function " << show(to_ld(scalar))
            << ", NumPy " << show(to_ld(expected[i]));
    }
  }
  INFO(Op::name << " " << type_name<U>() << " (" << how << "): " << bad << " evaluated and " << bad_scalar
                << " scalar results differ from NumPy's" << first.str());
  CHECK(bad + bad_scalar == 0);
}

template <class T>
void integer_ops_against_numpy() {
  using np = numpy_table<T>;
  const auto a = tensor(np::a), b = tensor(np::b), c = tensor(np::count);
  expect_numpy<ops::add>("a + b", a + b, np::add, np::a, np::b);
  expect_numpy<ops::sub>("a - b", a - b, np::sub, np::a, np::b);
  expect_numpy<ops::mul>("a * b", a * b, np::mul, np::a, np::b);
  expect_numpy<ops::neg>("-a", -a, np::neg, np::a);
  expect_numpy<ops::abs>("abs", abs(a), np::abs, np::a);
  expect_numpy<ops::square>("square", square(a), np::square, np::a);
  expect_numpy<ops::floor_divide>("function", floor_divide(a, b), np::floor_divide, np::a, np::b);
  expect_numpy<ops::remainder>("function", remainder(a, b), np::remainder, np::a, np::b);
  expect_numpy<ops::fmod>("function", fmod(a, b), np::fmod, np::a, np::b);
  expect_numpy<ops::bitwise_and>("a & b", a & b, np::bitwise_and, np::a, np::b);
  expect_numpy<ops::bitwise_or>("a | b", a | b, np::bitwise_or, np::a, np::b);
  expect_numpy<ops::bitwise_xor>("a ^ b", a ^ b, np::bitwise_xor, np::a, np::b);
  expect_numpy<ops::bitwise_not>("~a", ~a, np::bitwise_not, np::a);
  expect_numpy<ops::left_shift>("a << count", a << c, np::left_shift, np::a, np::count);
  expect_numpy<ops::right_shift>("a >> count", a >> c, np::right_shift, np::a, np::count);
  // The functions build the operators' nodes: the same types, so the values above hold for them too.
  STATIC_REQUIRE(std::is_same_v<decltype(bitwise_and(a, b)), decltype(a & b)>);
  STATIC_REQUIRE(std::is_same_v<decltype(bitwise_or(a, b)), decltype(a | b)>);
  STATIC_REQUIRE(std::is_same_v<decltype(bitwise_xor(a, b)), decltype(a ^ b)>);
  STATIC_REQUIRE(std::is_same_v<decltype(bitwise_not(a)), decltype(~a)>);
  STATIC_REQUIRE(std::is_same_v<decltype(left_shift(a, c)), decltype(a << c)>);
  STATIC_REQUIRE(std::is_same_v<decltype(right_shift(a, c)), decltype(a >> c)>);
  // Sums and products accumulate in int64 and wrap around, as NumPy's do.
  const Tensor<std::int64_t> total = sum(a), product = prod(a);
  CHECK(total() == np::sum);
  CHECK(product() == np::prod);
}

template <class T>
void floating_divmod_against_numpy() {
  using np = numpy_table<T>;
  const auto a = tensor(np::a), b = tensor(np::b);
  expect_numpy<ops::floor_divide>("function", floor_divide(a, b), np::floor_divide, np::a, np::b);
  expect_numpy<ops::remainder>("function", remainder(a, b), np::remainder, np::a, np::b);
}
} // namespace

TEST_CASE("int32 ops give NumPy's values: wrapping, floor division, shifts out of range", "[ops][int][numpy]") {
  integer_ops_against_numpy<std::int32_t>();
}
TEST_CASE("int64 ops give NumPy's values: wrapping, floor division, shifts out of range", "[ops][int][numpy]") {
  integer_ops_against_numpy<std::int64_t>();
}
TEST_CASE("floor_divide and remainder on float32 and float64 give NumPy's values", "[ops][numpy]") {
  floating_divmod_against_numpy<float>();
  floating_divmod_against_numpy<double>();
}
TEST_CASE("bitwise ops on bool stay bool; shifts of bools are int32", "[ops][bitwise][numpy]") {
  using np = numpy_table<bool>;
  const auto a = tensor(np::a), b = tensor(np::b);
  expect_numpy<ops::bitwise_and>("a & b", a & b, np::bitwise_and, np::a, np::b);
  expect_numpy<ops::bitwise_or>("a | b", a | b, np::bitwise_or, np::a, np::b);
  expect_numpy<ops::bitwise_xor>("a ^ b", a ^ b, np::bitwise_xor, np::a, np::b);
  expect_numpy<ops::bitwise_not>("~a", ~a, np::bitwise_not, np::a);
  expect_numpy<ops::left_shift>("a << b", a << b, np::left_shift, np::a, np::b);
  expect_numpy<ops::right_shift>("a >> b", a >> b, np::right_shift, np::a, np::b);
}

TEST_CASE("integer op typing: promotion, numbers, bools", "[ops][bitwise]") {
  Tensor<std::int32_t, shape<4>> i{};
  Tensor<std::int64_t, shape<4>> l{};
  Tensor<bool, shape<4>> p{};
  STATIC_REQUIRE(std::is_same_v<decltype(i & l)::value_type, std::int64_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(i | 1)::value_type, std::int32_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(3 ^ l)::value_type, std::int64_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(p & p)::value_type, bool>);
  STATIC_REQUIRE(std::is_same_v<decltype(~p)::value_type, bool>);
  STATIC_REQUIRE(std::is_same_v<decltype(p & 1)::value_type, std::int32_t>); // an integer number makes bool int32
  STATIC_REQUIRE(std::is_same_v<decltype(p << p)::value_type, std::int32_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(i << 2)::value_type, std::int32_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(floor_divide(i, 2))::value_type, std::int32_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(remainder(p, p))::value_type, std::int32_t>);
  STATIC_REQUIRE(std::is_same_v<decltype(remainder(i, 2.0f))::value_type, float>);
  for (int k = 0; k < 4; ++k) i(k) = 5 * k - 7; // -7 -2 3 8
  const Tensor<std::int32_t, shape<4>> q = floor_divide(i, 2), r = remainder(i, -3), s = i << 2, m = i & 6;
  const std::int32_t q_np[] = {-4, -1, 1, 4}, r_np[] = {-1, -2, 0, -1}, s_np[] = {-28, -8, 12, 32}, m_np[] = {0, 6, 2, 0};
  for (int k = 0; k < 4; ++k) {
    CHECK(q(k) == q_np[k]);
    CHECK(r(k) == r_np[k]);
    CHECK(s(k) == s_np[k]);
    CHECK(m(k) == m_np[k]);
  }
}

// operator<< and operator>> take only tensors, expressions and numbers: a stream on the left stays a stream.
TEST_CASE("std::cout << t still prints; t << n shifts", "[ops][bitwise][print]") {
  Tensor<std::int32_t, shape<3>> t{};
  for (int k = 0; k < 3; ++k) t(k) = k + 1;
  std::ostringstream os;
  STATIC_REQUIRE(std::is_same_v<decltype(os << t), std::ostream&>);
  STATIC_REQUIRE(std::is_same_v<decltype(os << (t << 1)), std::ostream&>);
  os << t << 1 << ' ' << (t << 1) << ' ' << (t >> 1);
  CHECK(os.str() == "[1 2 3]1 [2 4 6] [0 1 1]");
  const Tensor<std::int32_t, shape<3>>& ct = t;
  std::ostringstream cs;
  cs << ct;
  CHECK(cs.str() == "[1 2 3]");
}
