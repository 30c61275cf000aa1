// The basics: printing (against NumPy's own output), map over the caller's memory, flatten, and cast
// with the assignment rule that requires it.
#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

using namespace tenfold;

namespace {
template <class T, class S>
Tensor<T, S> iota(double scale, double shift = 0) {
  Tensor<T, S> t;
  for (index_t i = 0; i < S::size; ++i) t.data()[i] = T(double(i) * scale + shift);
  return t;
}
} // namespace

// The expected strings are NumPy 2.4's str() of the same arrays: tests/data/print_reference.py.
TEST_CASE("printing follows NumPy", "[basics][print]") {
  Tensor<float, shape<2, 3>> mixed{1, 2.5f, -3, 0.125f, 100, 7};
  CHECK(to_string(mixed) == R"([[  1.      2.5    -3.   ]
 [  0.125 100.      7.   ]])");
  CHECK(to_string(Tensor<float, shape<3>>{1, 2, 3}) == "[1. 2. 3.]");
  CHECK(to_string(Tensor<double, shape<3>>{1e-5, 1.5, 1000}) == "[1.0e-05 1.5e+00 1.0e+03]");
  CHECK(to_string(Tensor<float, shape<2>>{1e6f, 1}) == "[1.e+06 1.e+00]");
  CHECK(to_string(Tensor<double, shape<4>>{1.0 / 3, 2.0 / 3, 0.1 + 0.2, -0.0}) ==
        "[ 0.33333333  0.66666667  0.3        -0.        ]");
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(to_string(Tensor<double, shape<4>>{std::nan(""), -inf, 1.5, 0}) == "[ nan -inf  1.5  0. ]");
  CHECK(to_string(Tensor<std::int32_t, shape<2, 3>>{3, -40, 5, 600, 7, -8}) == R"([[  3 -40   5]
 [600   7  -8]])");
  CHECK(to_string(Tensor<std::int64_t, shape<3>>{-(std::int64_t(1) << 62), 1, std::int64_t(1) << 40}) ==
        "[-4611686018427387904                    1        1099511627776]");
  CHECK(to_string(Tensor<bool, shape<2, 2>>{true, false, false, true}) == R"([[ True False]
 [False  True]])");
  CHECK(to_string(Tensor<f16, shape<4>>{f16(0.1f), f16(1.5f), f16(-2.0f), f16(0.015625f)}) ==
        "[ 0.1      1.5     -2.       0.01563]");
  CHECK(to_string(Tensor<f16, shape<2>>{f16(1000.0f), f16(1.0f)}) == "[1.e+03 1.e+00]");
  // bf16 has no NumPy dtype: values whose shortest digits are the same in bf16 and float32.
  CHECK(to_string(Tensor<bf16, shape<2, 2>>{bf16(0.5f), bf16(-1.25f), bf16(3.0f), bf16(96.0f)}) == R"([[ 0.5  -1.25]
 [ 3.   96.  ]])");
  CHECK(to_string(iota<float, shape<2, 2, 3>>(0.25)) == R"([[[0.   0.25 0.5 ]
  [0.75 1.   1.25]]

 [[1.5  1.75 2.  ]
  [2.25 2.5  2.75]]])");
  CHECK(to_string(iota<double, shape<30>>(1.5)) ==
        R"([ 0.   1.5  3.   4.5  6.   7.5  9.  10.5 12.  13.5 15.  16.5 18.  19.5
 21.  22.5 24.  25.5 27.  28.5 30.  31.5 33.  34.5 36.  37.5 39.  40.5
 42.  43.5])");
  CHECK(to_string(Tensor<float>{1}) == "1.0");
  CHECK(to_string(Tensor<double>{1e-5}) == "1e-05");
  CHECK(to_string(Tensor<bool>{true}) == "True");
  CHECK(to_string(Tensor<std::int32_t>{-7}) == "-7");
  CHECK(to_string(Tensor<float, shape<2, 0>>{}) == "[]");
}

TEST_CASE("printing elides the long axes of large tensors", "[basics][print]") {
  CHECK(to_string(iota<float, shape<40, 30>>(0.125)) ==
        R"([[0.00000e+00 1.25000e-01 2.50000e-01 ... 3.37500e+00 3.50000e+00
  3.62500e+00]
 [3.75000e+00 3.87500e+00 4.00000e+00 ... 7.12500e+00 7.25000e+00
  7.37500e+00]
 [7.50000e+00 7.62500e+00 7.75000e+00 ... 1.08750e+01 1.10000e+01
  1.11250e+01]
 ...
 [1.38750e+02 1.38875e+02 1.39000e+02 ... 1.42125e+02 1.42250e+02
  1.42375e+02]
 [1.42500e+02 1.42625e+02 1.42750e+02 ... 1.45875e+02 1.46000e+02
  1.46125e+02]
 [1.46250e+02 1.46375e+02 1.46500e+02 ... 1.49625e+02 1.49750e+02
  1.49875e+02]])");
  CHECK(to_string(iota<std::int32_t, shape<3, 20, 20>>(1, -600)) == R"([[[-600 -599 -598 ... -583 -582 -581]
  [-580 -579 -578 ... -563 -562 -561]
  [-560 -559 -558 ... -543 -542 -541]
  ...
  [-260 -259 -258 ... -243 -242 -241]
  [-240 -239 -238 ... -223 -222 -221]
  [-220 -219 -218 ... -203 -202 -201]]

 [[-200 -199 -198 ... -183 -182 -181]
  [-180 -179 -178 ... -163 -162 -161]
  [-160 -159 -158 ... -143 -142 -141]
  ...
  [ 140  141  142 ...  157  158  159]
  [ 160  161  162 ...  177  178  179]
  [ 180  181  182 ...  197  198  199]]

 [[ 200  201  202 ...  217  218  219]
  [ 220  221  222 ...  237  238  239]
  [ 240  241  242 ...  257  258  259]
  ...
  [ 540  541  542 ...  557  558  559]
  [ 560  561  562 ...  577  578  579]
  [ 580  581  582 ...  597  598  599]]])");
}

TEST_CASE("streams print tensors, maps and expressions", "[basics][print]") {
  Tensor<float, shape<2, 3>> mixed{1, 2.5f, -3, 0.125f, 100, 7};
  std::ostringstream os;
  os << mixed + 1.0f << '|' << map<float, shape<3>>(mixed.data()) << '|' << mixed;
  CHECK(os.str() == R"([[  2.      3.5    -2.   ]
 [  1.125 101.      8.   ]]|[ 1.   2.5 -3. ]|)" +
                        to_string(mixed));
}

TEST_CASE("map reads and writes the caller's memory", "[basics][map]") {
  std::vector<float> buf(4 * 8), out(4 * 8, -1.0f);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = 0.25f * float(i) - 3;
  const std::vector<float>& cbuf = buf;
  auto x = map<float, shape<4, 8>>(buf.data());
  auto cx = map<float, shape<4, 8>>(cbuf.data()); // read-only
  STATIC_REQUIRE(std::is_same_v<decltype(cx), TensorMap<const float, shape<4, 8>>>);
  STATIC_REQUIRE(
      detail::is_leaf_v<detail::node_t<decltype(map<float, shape<4, 8>>(buf.data()))>>); // a temporary borrows

  auto y = map<float, shape<4, 8>>(out.data());
  y = exp(cx) * 2.0f;
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == Approx(std::exp(buf[i]) * 2).epsilon(1e-6));
  Tensor<float, shape<8>> bias = linspace<float, 8>(-1, 1);
  y = x + bias;
  y += 1.0f;
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t c = 0; c < 8; ++c) CHECK(out[r * 8 + c] == buf[r * 8 + c] + bias(index_t(c)) + 1);
  // A map destination of a reduction, and a map's elements through operator().
  std::vector<float> sums(4);
  auto s = map<float, shape<4>>(sums.data());
  s = sum(cx, axis<1>);
  for (std::size_t r = 0; r < 4; ++r) {
    float want = 0;
    for (std::size_t c = 0; c < 8; ++c) want += buf[r * 8 + c];
    CHECK(s(index_t(r)) == Approx(want));
  }
  x(1, 2) = 42;
  CHECK(buf[10] == 42);
  CHECK(cx(1, 2) == 42);
  CHECK_THROWS_WITH(cx(4, 0), Catch::Contains("out of range") && Catch::Contains("[4,8]"));
  // Assignment between maps copies the elements; it never rebinds.
  y = x;
  CHECK(out == buf);
  Tensor<float, shape<4, 8>> copy = cx;
  CHECK(copy(3, 7) == buf[31]);
}

TEST_CASE("maps over overlapping memory are evaluated as aliases", "[basics][map]") {
  std::vector<float> v(38);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  auto a = map<float, shape<37>>(v.data());
  auto b = map<float, shape<37>>(v.data() + 1);
  b = a * 2.0f; // reads v[0..36], writes v[1..37]: every read sees the old value
  CHECK(v[0] == 0);
  for (std::size_t i = 1; i < v.size(); ++i) CHECK(v[i] == 2.0f * float(i - 1));
}

TEST_CASE("map rejects null and misaligned pointers", "[basics][map]") {
  CHECK_THROWS_WITH((map<float, shape<2>>(static_cast<float*>(nullptr))),
                    Catch::Contains("null") && Catch::Contains("float32* for a [2] map"));
  alignas(8) unsigned char raw[64] = {};
  auto* odd = reinterpret_cast<const double*>(raw + 4);
  CHECK_THROWS_WITH((map<double, shape<3>>(odd)),
                    Catch::Contains("not aligned to 8 bytes") && Catch::Contains("const float64* for a [3] map"));
  CHECK_THROWS_AS((map<std::int32_t, shape<1>>(reinterpret_cast<std::int32_t*>(raw + 2))), error);
}

TEST_CASE("flatten is a reshape to one axis", "[basics][flatten]") {
  auto t = iota<float, shape<2, 3, 4>>(1);
  STATIC_REQUIRE(detail::is_leaf_v<decltype(flatten(t))>); // no copy: a leaf over t's elements
  STATIC_REQUIRE(std::is_same_v<decltype(flatten(t))::shape_type, shape<24>>);
  STATIC_REQUIRE(std::is_same_v<decltype(flatten<1>(t))::shape_type, shape<2, 12>>);
  STATIC_REQUIRE(std::is_same_v<decltype(flatten<0, 1>(t))::shape_type, shape<6, 4>>);
  STATIC_REQUIRE(std::is_same_v<decltype(flatten<-2, -2>(t))::shape_type, shape<2, 3, 4>>);
  STATIC_REQUIRE(std::is_same_v<decltype(flatten(Tensor<float>{}))::shape_type, shape<1>>);
  CHECK(flatten(t).data() == t.data());
  Tensor<float, shape<24>> f = flatten(t * 2.0f);
  for (index_t i = 0; i < 24; ++i) CHECK(f(i) == 2.0f * float(i));
  Tensor<float, shape<4, 6>> g = flatten<1>(transpose(t)); // a strided view: [4,3,2] read as [4,6]
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 4; ++k) CHECK(g(k, j * 2 + i) == t(i, j, k));
}

TEST_CASE("assignment converts implicitly only where nothing is lost", "[basics][cast]") {
  STATIC_REQUIRE(widens_v<std::int64_t, std::int32_t>);
  STATIC_REQUIRE(widens_v<double, float>);
  STATIC_REQUIRE(widens_v<float, bf16>);
  STATIC_REQUIRE(widens_v<double, f16>);
  STATIC_REQUIRE(widens_v<float, std::int64_t>);
  STATIC_REQUIRE(widens_v<bf16, bool>);
  STATIC_REQUIRE(!widens_v<std::int32_t, float>);
  STATIC_REQUIRE(!widens_v<std::int32_t, std::int64_t>);
  STATIC_REQUIRE(!widens_v<float, double>);
  STATIC_REQUIRE(!widens_v<bf16, float>);
  STATIC_REQUIRE(!widens_v<f16, bf16>);
  STATIC_REQUIRE(!widens_v<bf16, std::int32_t>);
  STATIC_REQUIRE(!widens_v<bool, std::int32_t>);
  Tensor<std::int32_t, shape<3>> i{1, -2, 3};
  Tensor<std::int64_t, shape<3>> wide = i * 2;
  Tensor<double, shape<3>> d = i;
  CHECK(wide(1) == -4);
  CHECK(d(2) == 3.0);
}

TEST_CASE("cast: truncation, saturation and NaN are defined", "[basics][cast]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor<float, shape<10>> x{2.9f, -2.9f, -0.0f, nan, inf, -inf, 3e9f, -3e9f, 2147483520.0f, -2147483648.0f};
  Tensor<std::int32_t, shape<10>> i = cast<std::int32_t>(x);
  const std::int32_t lo = std::numeric_limits<std::int32_t>::lowest(), hi = std::numeric_limits<std::int32_t>::max();
  const std::int32_t want[] = {2, -2, 0, 0, hi, lo, hi, lo, 2147483520, lo};
  for (index_t k = 0; k < 10; ++k) CHECK(i(k) == want[k]);
  Tensor<bool, shape<10>> b = cast<bool>(x);
  for (index_t k = 0; k < 10; ++k) CHECK(b(k) == (k != 2)); // NaN is true
  Tensor<std::int64_t, shape<4>> big{std::int64_t(1) << 40, -(std::int64_t(1) << 40), 7, -7};
  Tensor<std::int32_t, shape<4>> narrow = cast<std::int32_t>(big + 1);
  CHECK(narrow(0) == hi);
  CHECK(narrow(1) == lo);
  CHECK(narrow(2) == 8);
  Tensor<float, shape<2>> f = cast<float>(Tensor<double, shape<2>>{1e300, 0.1});
  CHECK(f(0) == inf);
  CHECK(f(1) == 0.1f);
  Tensor<double, shape<2>> back = cast<std::int64_t>(Tensor<double, shape<2>>{-1e300, 1e300});
  CHECK(back(0) == double(std::numeric_limits<std::int64_t>::lowest()));
  CHECK(back(1) == double(std::numeric_limits<std::int64_t>::max()));
}

TEST_CASE("cast to and from the half types, vectorised", "[basics][cast]") {
  // 37 elements: whole SIMD batches and a scalar tail.
  Tensor<float, shape<37>> x;
  for (index_t k = 0; k < 37; ++k)
    x(k) = 1.0f + float(k) * 0x1p-9f + (k % 3 == 0 ? 0x1p-23f : 0.0f); // ties and near ties
  x(5) = std::numeric_limits<float>::quiet_NaN();
  x(6) = 3.4e38f;
  Tensor<bf16, shape<37>> h = cast<bf16>(x);
  Tensor<float, shape<37>> r = cast<bf16>(x) * 1.0f; // rounded inside the expression
  Tensor<float, shape<37>> w = h;                    // bf16 -> float widens
  for (index_t k = 0; k < 37; ++k) {
    const bf16 want(x(k));
    if (k == 5) {
      CHECK(std::isnan(float(h(k))));
      CHECK(std::isnan(r(k)));
      continue;
    }
    CHECK(h(k).bits == want.bits);
    CHECK(r(k) == float(want));
    CHECK(w(k) == float(want));
  }
  Tensor<f16, shape<3>> g = cast<f16>(Tensor<double, shape<3>>{0.1, 70000, -1e-9});
  CHECK(g(0).bits == f16(0.1).bits);
  CHECK(std::isinf(float(g(1))));
  CHECK(float(g(2)) == 0.0f);
  // A bf16 output of a GEMM is a cast in its fused store (as the CUDA tests and models write it).
  const auto a = iota<bf16, shape<5, 12>>(0.125, -3);
  const auto b = iota<bf16, shape<12, 7>>(-0.0625, 2);
  const auto bias = iota<float, shape<7>>(0.5, -1);
  Tensor<bf16, shape<5, 7>> y = cast<bf16>(relu(matmul(a, b) + bias));
  for (index_t i = 0; i < 5; ++i)
    for (index_t j = 0; j < 7; ++j) {
      float acc = 0;
      for (index_t k = 0; k < 12; ++k) acc += float(a(i, k)) * float(b(k, j));
      CHECK(y(i, j).bits == bf16(std::max(0.0f, acc + bias(j))).bits);
    }
  Tensor<std::int32_t, shape<2>> n = cast<std::int32_t>(Tensor<bf16, shape<2>>{bf16(-7.5f), bf16(3e10f)});
  CHECK(n(0) == -7);
  CHECK(n(1) == std::numeric_limits<std::int32_t>::max());
}

TEST_CASE("flush_denormals: denormal results and inputs are zero on every pool thread, until turned off", "[basics][denormals]") {
  constexpr index_t n = index_t(1) << 18; // many times the parallel grain: every thread of the pool takes a share
  Tensor<float, shape<n>> x, y;
  const float tiny = std::numeric_limits<float>::min() / 64; // a denormal; 2 * tiny is one too
  REQUIRE(std::fpclassify(tiny) == FP_SUBNORMAL);
  struct restore {
    ~restore() { cpu::flush_denormals(false); }
  } guard;
  if (!cpu::flush_denormals()) {
    WARN("flush_denormals: not supported on this target (x86 only)");
    return;
  }
  for (auto& v : x) v = 1e-30f;
  y = x * 1e-10f; // 1e-40: a denormal result, flushed (FTZ)
  for (index_t i = 0; i < n; ++i) REQUIRE(y.data()[i] == 0.0f);
  for (auto& v : x) v = tiny;
  y = x * 2.0f; // a denormal input, read as zero (DAZ)
  for (index_t i = 0; i < n; ++i) REQUIRE(y.data()[i] == 0.0f);
  cpu::flush_denormals(false);
  y = x * 2.0f;
  for (index_t i = 0; i < n; ++i) REQUIRE(y.data()[i] == 2.0f * tiny);
}
