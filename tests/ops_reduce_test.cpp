// Reductions and scans, generated from the op table: every entry of ops::reduction_ops over whole tensors
// of sizes around the SIMD width and the block size, with special values injected, over transposed,
// strided and broadcast operands (float32 here, float64 in ops_reduce_f64_test.cpp); NaN through the
// extreme-value reductions; cumsum/cumprod along every axis; and the summation-order guarantees (pairwise
// accuracy, bitwise determinism). The 16 axis subsets of a rank-4 tensor are in ops_reduce_axes_test.cpp
// and ops_reduce_keepdims_test.cpp.
#include "reduce_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

TEST_CASE("reductions: float32, whole tensors, special values and views", "[ops][reduce]") {
  ops::reduction_ops::for_each([]<class Op>() { reduction_cases<Op, float>(); });
}

// ---- max, min, argmax, argmin and NaN --------------------------------------------------------------------
TEST_CASE("NaN propagates through max and min, argmax and argmin return the first NaN", "[ops][reduce][nan]") {
  Tensor<float, shape<64, 37>> x;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : x) v = u(rng);
  x(40, 5) = NAN; // column 5: NaN at rows 3 and 40 (axis 0 keeps the innermost axis: the tiled path)
  x(3, 5) = NAN;
  x(10, 36) = NAN; // row 10: NaN in the last column (the scalar tail of a run)
  x(10, 20) = INFINITY;
  Tensor<float, shape<37>> mx0 = max(x, axis<0>), mn0 = min(x, axis<0>);
  Tensor<std::int64_t, shape<37>> amx0 = argmax(x, axis<0>), amn0 = argmin(x, axis<0>);
  Tensor<float, shape<64>> mx1 = max(x, axis<1>), mn1 = min(x, axis<1>);
  Tensor<std::int64_t, shape<64>> amx1 = argmax(x, axis<1>), amn1 = argmin(x, axis<1>);
  CHECK(std::isnan(mx0(5)));
  CHECK(std::isnan(mn0(5)));
  CHECK(amx0(5) == 3);
  CHECK(amn0(5) == 3);
  CHECK(std::isnan(mx0(36))); // column 36 holds row 10's NaN
  CHECK(amx0(36) == 10);
  CHECK(mx0(20) == INFINITY);
  CHECK(std::isnan(mx1(10)));
  CHECK(std::isnan(mn1(10)));
  CHECK(amx1(10) == 36);
  CHECK(amn1(10) == 36);
  CHECK(amx1(3) == 5);
  CHECK(!std::isnan(mx1(4)));
  Tensor<float, shape<>> all_max = max(x);
  Tensor<std::int64_t, shape<>> all_arg = argmax(x);
  CHECK(std::isnan(all_max()));
  CHECK(all_arg() == 3 * 37 + 5); // the first NaN in row-major order
}

// ---- var and std -------------------------------------------------------------------------------------------
namespace {
// Σ (x - mean)² / (n - c) in long double, two-pass.
long double var_reference(const std::vector<long double>& x, int c) {
  long double m = 0, s = 0;
  for (long double v : x) m += v;
  m /= x.size();
  for (long double v : x) s += (v - m) * (v - m);
  return s / (static_cast<long double>(x.size()) - c);
}
template <int C>
void check_var_far_from_zero(const Tensor<float, shape<6, 5000>>& x) {
  constexpr auto corr = correction<C>;
  auto rel = [](long double got, long double want) { return std::fabs(got - want) / want; };
  Tensor<float, shape<6>> rows = var(x, axis<1>, corr), rows_std = tenfold::std(x, axis<1>, corr);
  Tensor<float, shape<6, 5000>> fused = x * 0.0f + var(x, axis<1>, keepdims, corr); // the row-fused path
  Tensor<float, shape<5000>> cols = var(x, axis<0>, corr);                           // innermost axis kept
  Tensor<float> whole = var(x, corr);
  long double worst = 0;
  std::vector<long double> all;
  for (int i = 0; i < 6; ++i) {
    std::vector<long double> r;
    for (int j = 0; j < 5000; ++j) r.push_back(x(i, j)), all.push_back(x(i, j));
    const long double want = var_reference(r, C);
    worst = std::max({worst, rel(rows(i), want), rel(fused(i, 4999), want), rel(rows_std(i), std::sqrt(want))});
  }
  for (int j = 0; j < 5000; j += 7) {
    std::vector<long double> c;
    for (int i = 0; i < 6; ++i) c.push_back(x(i, j));
    worst = std::max(worst, rel(cols(j), var_reference(c, C)));
  }
  worst = std::max(worst, rel(whole(), var_reference(all, C)));
  INFO("correction " << C << ": worst relative error " << double(worst));
  CHECK(worst <= 4e-7); // float's ulp is 1.2e-7 relative at most
}
} // namespace

// Issue 13: single-pass float Welford gave 4e-4 relative error on data with mean 1e4 and unit spread.
TEST_CASE("var and std of float data far from zero, along rows, columns, whole and row-fused; correction (ddof)",
          "[ops][reduce][var]") {
  std::mt19937_64 rng(13);
  std::normal_distribution<float> d(1e4f, 1.0f);
  Tensor<float, shape<6, 5000>> x;
  for (float& v : x) v = d(rng);
  check_var_far_from_zero<1>(x); // PyTorch's default, also var(x)'s
  check_var_far_from_zero<0>(x); // NumPy's default
  check_var_far_from_zero<2>(x);
  // The default is correction 1; n - correction <= 0 divides by 0, as NumPy and PyTorch do: NaN for one
  // element (0 / 0), inf otherwise (np.std([1, 2, 4], ddof=3) is inf).
  STATIC_REQUIRE(std::is_same_v<decltype(var(x, axis<1>)), decltype(var(x, axis<1>, correction<1>))>);
  Tensor<float, shape<1, 3>> one{};
  one(0, 0) = 1, one(0, 1) = 2, one(0, 2) = 4;
  Tensor<float, shape<3>> single = var(one, axis<0>);
  Tensor<float> three = var(one), three0 = var(one, correction<0>), three3 = tenfold::std(one, correction<3>);
  CHECK(std::isnan(single(0)));
  CHECK(three() == Approx(7.0 / 3).epsilon(1e-6));  // mean 7/3, Σ d² = 14/3, / 2
  CHECK(three0() == Approx(14.0 / 9).epsilon(1e-6));
  CHECK(std::isinf(three3()));
}

// ---- scans -----------------------------------------------------------------------------------------------
namespace {
// cumsum/cumprod (Op = sum/prod) along Axis of x (holding v, shape S), against a long-double prefix.
template <class Op, int Axis, class T, class S, class X>
void check_scan(const std::string& what, X&& x, const std::vector<T>& v) {
  auto e = [&] {
    if constexpr (std::is_same_v<Op, ops::sum>) return cumsum(x, axis<Axis>);
    else return cumprod(x, axis<Axis>);
  }();
  Tensor<typename decltype(e)::value_type, S> out = e;
  report rep{std::string("cum") + std::string(Op::name) + " " + std::string(type_name<T>()) + " " + what + " axis " +
             std::to_string(Axis)};
  constexpr int R = S::rank, ax = Axis < 0 ? Axis + R : Axis;
  std::array<index_t, R> idx{};
  for (index_t f = 0; f < S::size; ++f) {
    detail::unravel<S>(f, idx.data());
    std::vector<long double> prefix;
    auto j = idx;
    for (j[ax] = 0; j[ax] <= idx[ax]; ++j[ax]) {
      index_t g = 0;
      for (int a = 0; a < R; ++a) g = g * S::dims[a] + j[a];
      prefix.push_back(to_ld(v[g]));
    }
    check_reduction<Op>(rep, f, prefix, out.data()[f], static_cast<long double>(prefix.size()));
  }
  rep.finish();
}

template <class Op, class T>
void scan_cases() {
  using S = shape<4, 5, 33>;
  std::mt19937_64 rng(seed_of(Op::name, type_name<T>(), 9));
  const auto v = draw_n<T>(reduction_domain<Op>(), S::size, rng);
  auto x = tensor_of<T, S>(v);
  check_scan<Op, 0, T, S>("[4,5,33]", x, v);
  check_scan<Op, 1, T, S>("[4,5,33]", x, v);
  check_scan<Op, 2, T, S>("[4,5,33]", x, v);
  check_scan<Op, -1, T, S>("[4,5,33]", x, v); // -1: the last axis
  // Along the axes of a transposed view: the values v' of transpose(y) in row-major order.
  const auto w = draw_n<T>(reduction_domain<Op>(), 37 * 29, rng);
  auto y = tensor_of<T, shape<37, 29>>(w);
  std::vector<T> wt(w.size());
  for (index_t i = 0; i < 29; ++i)
    for (index_t j = 0; j < 37; ++j) wt[i * 37 + j] = w[j * 29 + i];
  check_scan<Op, 0, T, shape<29, 37>>("transposed [29,37]", transpose(y), wt);
  check_scan<Op, 1, T, shape<29, 37>>("transposed [29,37]", transpose(y), wt);
}
} // namespace

TEST_CASE("cumsum and cumprod along every axis of a rank-3 tensor and of a transposed view", "[ops][scan]") {
  scan_cases<ops::sum, float>();
  scan_cases<ops::sum, double>();
  scan_cases<ops::prod, float>();
  scan_cases<ops::prod, double>();
}

// ---- summation order -------------------------------------------------------------------------------------
TEST_CASE("sum of 10^7 random floats in [0,1) is within 1e-6 relative of the long-double sum",
          "[ops][reduce][accuracy]") {
  constexpr index_t n = 10'000'000;
  Tensor<float, shape<n>> x;
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<float> u(0, 1);
  long double exact = 0; // exact: 10^7 multiples of 2^-24 below 2^24 need 48 bits, long double has 64
  for (float& v : x) exact += v = u(rng);
  Tensor<float, shape<>> s = sum(x);
  Tensor<float, shape<>> m = mean(x);
  INFO("sum " << show(s()) << ", exact " << show(exact));
  CHECK(std::fabs(s() - exact) / exact < 1e-6L);
  CHECK(std::fabs(m() - exact / n) / (exact / n) < 1e-6L);
}

namespace {
// The CPU kernel's summation order (cpu/reduce.hpp) written out serially: blocks of 1024 elements, each
// summed by 4 batch accumulators of w lanes (the last full batches into the first accumulator), the
// accumulators added pairwise lane by lane, the lanes added as a halving tree, then the scalar tail; the blocks
// are joined by a pairwise tree split at the midpoint. Threads compute subtrees of the same tree, so the
// result must equal this bit for bit whatever the thread count. (Changing the kernel's order on purpose
// means updating this model.)
template <class T>
T block_sum_model(const T* x, index_t lo, index_t hi) {
  constexpr index_t w = index_t(xsimd::batch<T>::size);
  T acc = 0;
  index_t j = lo;
  if (hi - lo >= w) {
    T a[4][w] = {};
    for (; j + 4 * w <= hi; j += 4 * w)
      for (int q = 0; q < 4; ++q)
        for (index_t k = 0; k < w; ++k) a[q][k] += x[j + q * w + k];
    for (; j + w <= hi; j += w)
      for (index_t k = 0; k < w; ++k) a[0][k] += x[j + k];
    T lane[w];
    for (index_t k = 0; k < w; ++k) lane[k] = (a[0][k] + a[1][k]) + (a[2][k] + a[3][k]);
    for (index_t step = w / 2; step >= 1; step /= 2)
      for (index_t k = 0; k < step; ++k) lane[k] += lane[k + step];
    acc += lane[0];
  }
  for (; j < hi; ++j) acc += x[j];
  return acc;
}
template <class T>
T tree_sum_model(const T* x, index_t b0, index_t b1, index_t n) {
  if (b1 - b0 == 1) return block_sum_model(x, b0 * 1024, std::min(n, b1 * 1024));
  const index_t mid = b0 + (b1 - b0) / 2;
  return tree_sum_model(x, b0, mid, n) + tree_sum_model(x, mid, b1, n);
}

template <class T, index_t N>
void check_determinism() {
  Tensor<T, shape<N>> x;
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<T> u(-1, 1);
  for (T& v : x) v = u(rng);
  Tensor<T, shape<>> a = sum(x), b = sum(x);
  const T model = T(0) + tree_sum_model(x.data(), 0, (N + 1023) / 1024, N);
  INFO(type_name<T>() << " sum of " << N << " elements: " << show(a()) << ", again " << show(b()) << ", model "
                      << show(model) << " (" << cpu::thread_pool::instance().size() << " threads)");
  CHECK(std::bit_cast<std::array<unsigned char, sizeof(T)>>(a()) ==
        std::bit_cast<std::array<unsigned char, sizeof(T)>>(b()));
  CHECK(std::bit_cast<std::array<unsigned char, sizeof(T)>>(a()) ==
        std::bit_cast<std::array<unsigned char, sizeof(T)>>(model));
}

// A column sum (the innermost axis kept): per column, blocks of 1024 rows each summed in row order, the
// blocks' sums then added in order; the blocks of one row of outputs are shared out over the threads.
template <class T, index_t Rows, index_t Cols>
void check_column_determinism() {
  Tensor<T, shape<Rows, Cols>> x;
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<T> u(-1, 1);
  for (T& v : x) v = u(rng);
  Tensor<T, shape<Cols>> a = sum(x, axis<0>);
  for (index_t j = 0; j < Cols; ++j) {
    T model = 0;
    for (index_t b = 0; b < Rows; b += 1024) {
      T blk = 0;
      for (index_t i = b; i < std::min(Rows, b + 1024); ++i) blk += x(i, j);
      model += blk;
    }
    INFO(type_name<T>() << " column " << j << " of " << Rows << " rows: " << show(a(j)) << ", model " << show(model) << " ("
                        << cpu::thread_pool::instance().size() << " threads)");
    CHECK(std::bit_cast<std::array<unsigned char, sizeof(T)>>(a(j)) == std::bit_cast<std::array<unsigned char, sizeof(T)>>(model));
  }
}
} // namespace

TEST_CASE("a column sum adds blocks of rows in a fixed order: bitwise equal to a serial model",
          "[ops][reduce][determinism]") {
  check_column_determinism<float, 3000, 24>();  // three blocks (the last short), a scalar tail of columns
  check_column_determinism<double, 50176, 16>(); // batch norm's per-channel sums over 64 x 28 x 28
  check_column_determinism<float, 1000, 5>();   // one block
}

// tests/CMakeLists.txt also runs this case with TENFOLD_NUM_THREADS=1 and =3: the same bits each time.
TEST_CASE("sum is pairwise in a fixed order: bitwise equal to a serial model, run after run",
          "[ops][reduce][determinism]") {
  check_determinism<float, 1000003>(); // threaded: more than 4 × 2^15 elements
  check_determinism<float, 4099>();    // serial: a few blocks and a tail
  check_determinism<double, 1000003>();
  check_determinism<float, 10'000'000>();
}
