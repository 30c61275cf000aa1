// The basics: printing (against NumPy's own output).
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

TEST_CASE("streams print tensors and expressions", "[basics][print]") {
  Tensor<float, shape<2, 3>> mixed{1, 2.5f, -3, 0.125f, 100, 7};
  std::ostringstream os;
  os << mixed + 1.0f << '|' << mixed;
  CHECK(os.str() == R"([[  2.      3.5    -2.   ]
 [  1.125 101.      8.   ]]|)" +
                        to_string(mixed));
}
