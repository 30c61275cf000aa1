// A destination that the expression also reads (plan/aliasing.hpp): every form gives the result of
// evaluating into a fresh tensor. References are plain loops over a copy of the inputs taken before
// the assignment.
#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <vector>

using namespace tenfold;

namespace {
constexpr int n = 64;
using mat = Tensor<float, shape<n, n>>;

void fill(mat& x) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) x(i, j) = float(i * n + j) / 1024.0f - 2.0f;
}
std::vector<float> copy_of(const mat& x) { return std::vector<float>(x.data(), x.data() + n * n); }
// Counts the elements of x that differ from f(i, j) by more than tol (relative to max(1, |f|)).
template <class F>
int wrong(const mat& x, F f, double tol = 0) {
  int bad = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double want = f(i, j);
      bad += !(std::fabs(double(x(i, j)) - want) <= tol * std::fmax(1.0, std::fabs(want)));
    }
  return bad;
}
} // namespace

TEST_CASE("a let bound to the destination and read through a view", "[aliasing]") {
  mat x;
  fill(x);
  const auto x0 = copy_of(x);
  x = let(x, [](const auto& p) { return transpose(p); }); // 1792 of 4096 elements were wrong
  CHECK(wrong(x, [&](int i, int j) { return x0[j * n + i]; }) == 0);
  fill(x);
  x = let(x * 2.0f, [](const auto& p) { return transpose(p) + p; }); // the value is in a buffer: safe either way
  CHECK(wrong(x, [&](int i, int j) { return 2.0 * x0[j * n + i] + 2.0 * x0[i * n + j]; }, 1e-6) == 0);
}

TEST_CASE("views of the destination: transpose, flip, slice, broadcast", "[aliasing]") {
  mat x;
  fill(x);
  const auto x0 = copy_of(x);
  x = transpose(x) + x;
  CHECK(wrong(x, [&](int i, int j) { return double(x0[j * n + i]) + x0[i * n + j]; }, 1e-6) == 0);
  fill(x);
  x = flip<0>(x);
  CHECK(wrong(x, [&](int i, int j) { return x0[(n - 1 - i) * n + j]; }) == 0);
  fill(x);
  x = flip(x) * x; // both axes
  CHECK(wrong(x, [&](int i, int j) { return double(x0[(n - 1 - i) * n + (n - 1 - j)]) * x0[i * n + j]; }, 1e-6) == 0);
  fill(x);
  x = broadcast_to<shape<n, n>>(slice<range<0, 1>>(x)); // every row becomes row 0
  CHECK(wrong(x, [&](int, int j) { return x0[j]; }) == 0);
  fill(x);
  eval(slice<range<1, n>>(x), slice<range<0, n - 1>>(x)); // shift rows down by one (memmove-like)
  CHECK(wrong(x, [&](int i, int j) { return x0[(i == 0 ? 0 : i - 1) * n + j]; }) == 0);
  fill(x);
  x = x * 3.0f + 1.0f; // read in place at the element written: no copy needed, still right
  CHECK(wrong(x, [&](int i, int j) { return 3.0 * x0[i * n + j] + 1.0; }, 1e-6) == 0);
}

TEST_CASE("a reduction written into a view of its own source", "[aliasing]") {
  mat x;
  fill(x);
  const auto x0 = copy_of(x);
  eval(slice<range<0, 1>>(x), sum(x, axis<0>, keepdims)); // row 0 = column sums, all rows read first
  CHECK(wrong(x, [&](int i, int j) {
          if (i > 0) return double(x0[i * n + j]);
          double s = 0;
          for (int k = 0; k < n; ++k) s += x0[k * n + j];
          return s;
        }, 1e-5) == 0);
  fill(x);
  x = x - max(x, axis<1>, keepdims); // a row-fused reduction of the destination
  CHECK(wrong(x, [&](int i, int j) { return double(x0[i * n + j]) - x0[i * n + n - 1]; }, 1e-6) == 0);
}

TEST_CASE("a matmul, a convolution and attention reading their destination", "[aliasing]") {
  mat x, w;
  fill(x);
  rng g(3);
  w = uniform<shape<n, n>>(g, -1.0f, 1.0f);
  const auto x0 = copy_of(x);
  x = relu(matmul(x, w) + x);
  CHECK(wrong(x, [&](int i, int j) {
          double s = x0[i * n + j];
          for (int k = 0; k < n; ++k) s += double(x0[i * n + k]) * w(k, j);
          return s > 0 ? s : 0.0;
        }, 1e-4) == 0);

  Tensor<float, shape<1, 2, 6, 6>> img = uniform<shape<1, 2, 6, 6>>(g, -1.0f, 1.0f);
  const Tensor<float, shape<2, 2, 3, 3>> k = uniform<shape<2, 2, 3, 3>>(g, -1.0f, 1.0f);
  const Tensor<float, shape<1, 2, 6, 6>> img0 = img;
  img = conv2d(img, k, padding<1>);
  int bad = 0;
  for (int o = 0; o < 2; ++o)
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 6; ++c) {
        double s = 0;
        for (int ci = 0; ci < 2; ++ci)
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) {
              const int rr = r + a - 1, cc = c + b - 1;
              if (rr >= 0 && rr < 6 && cc >= 0 && cc < 6) s += double(img0(0, ci, rr, cc)) * k(o, ci, a, b);
            }
        bad += std::fabs(img(0, o, r, c) - s) > 1e-5;
      }
  CHECK(bad == 0);

  Tensor<float, shape<8, 4>> q = uniform<shape<8, 4>>(g, -1.0f, 1.0f);
  const Tensor<float, shape<8, 4>> kk = uniform<shape<8, 4>>(g, -1.0f, 1.0f), q0 = q;
  q = attention(q, kk, q); // q is both the queries and the values
  bad = 0;
  for (int i = 0; i < 8; ++i) {
    double sc[8], m = -1e300, l = 0;
    for (int j = 0; j < 8; ++j) {
      sc[j] = 0;
      for (int d = 0; d < 4; ++d) sc[j] += double(q0(i, d)) * kk(j, d);
      sc[j] /= 2.0; // 1/sqrt(4)
      m = std::fmax(m, sc[j]);
    }
    for (int j = 0; j < 8; ++j) l += std::exp(sc[j] - m);
    for (int e = 0; e < 4; ++e) {
      double o = 0;
      for (int j = 0; j < 8; ++j) o += std::exp(sc[j] - m) / l * q0(j, e);
      bad += std::fabs(q(i, e) - o) > 1e-5;
    }
  }
  CHECK(bad == 0);
}

namespace {
// h <- tanh(h W + transpose-read of h): the update reads the state it replaces through a matmul and a view.
struct self_reader {
  Tensor<float, shape<4, 4>> w, h;
  auto state() { return std::tie(h); }
  auto forward(const Tensor<float, shape<4, 4>>& x) { return sequence(update(h, tanh(matmul(h, w) + transpose(h))), h + x); }
};
} // namespace

TEST_CASE("a program's state update that reads the state", "[aliasing][program]") {
  self_reader m;
  rng g(8);
  m.w = uniform<shape<4, 4>>(g, -1.0f, 1.0f);
  m.h = uniform<shape<4, 4>>(g, -1.0f, 1.0f);
  const Tensor<float, shape<4, 4>> h0 = m.h, x = uniform<shape<4, 4>>(g, -1.0f, 1.0f);
  program<self_reader, Tensor<float, shape<4, 4>>> run(m);
  const Tensor<float, shape<4, 4>> y = run(x);
  int bad = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = h0(j, i);
      for (int k = 0; k < 4; ++k) s += double(h0(i, k)) * m.w(k, j);
      bad += std::fabs(m.h(i, j) - std::tanh(s)) > 1e-5;
      bad += std::fabs(y(i, j) - (std::tanh(s) + x(i, j))) > 1e-5;
    }
  CHECK(bad == 0);
}
