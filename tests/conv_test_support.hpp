// Shared by conv_test.cpp and conv_transpose_test.cpp: the parameter grid's case type, a naive
// long-double reference written from the definitions (conv: a gather over the window; transposed: the
// scatter of each input element, PyTorch's definition of the adjoint), and the check of a tenfold
// result against it with a dot-product error bound.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include <tenfold/tenfold.hpp>

namespace conv_testing {
using namespace tenfold;
using ld = long double;

// One point of the grid. oc: output channels (conv2d) or output channels per group (transposed).
struct conv_case {
  index_t n, c, h, w, oc, kh, kw;
  index_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1, oph = 0, opw = 0;
};

template <class T, class S>
void fill(Tensor<T, S>& t, std::uint64_t seed) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 3;
  for (auto& v : t) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = T(-1.0 + 2.0 * double(s >> 40) * 0x1p-24);
  }
}

// Output extents from the case (written out here, not taken from the library).
constexpr index_t out_extent(index_t in, index_t k, index_t s, index_t p, index_t d, index_t op, bool tr) {
  return tr ? (in - 1) * s - 2 * p + d * (k - 1) + op + 1 : (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

struct reference {
  std::vector<ld> value, magnitude; // the sum and the sum of |terms|, in the output's layout
  index_t terms = 0;                // most terms in one sum
};

// x and w contiguous in the layout's order (see core/conv_node.hpp).
template <class T>
reference naive(const conv_case& p, bool nhwc, bool tr, const T* x, const T* w) {
  const index_t G = p.groups, Cg = p.c / G, OC = tr ? p.oc * G : p.oc, OCg = OC / G;
  const index_t OH = out_extent(p.h, p.kh, p.sh, p.ph, p.dh, p.oph, tr), OW = out_extent(p.w, p.kw, p.sw, p.pw, p.dw, p.opw, tr);
  auto xi = [&](index_t n, index_t c, index_t i, index_t j) { return nhwc ? ((n * p.h + i) * p.w + j) * p.c + c : ((n * p.c + c) * p.h + i) * p.w + j; };
  auto oi = [&](index_t n, index_t c, index_t i, index_t j) { return nhwc ? ((n * OH + i) * OW + j) * OC + c : ((n * OC + c) * OH + i) * OW + j; };
  // w by (output channel within group m, input channel within group c, kh, kw), group g
  auto wi = [&](index_t g, index_t m, index_t c, index_t a, index_t b) {
    if (!tr) return nhwc ? ((a * p.kw + b) * Cg + c) * OC + g * OCg + m : (((g * OCg + m) * Cg + c) * p.kh + a) * p.kw + b;
    return nhwc ? ((a * p.kw + b) * OCg + m) * p.c + g * Cg + c : (((g * Cg + c) * OCg + m) * p.kh + a) * p.kw + b;
  };
  reference r;
  r.value.assign(std::size_t(p.n * OC * OH * OW), 0);
  r.magnitude.assign(r.value.size(), 0);
  r.terms = Cg * p.kh * p.kw;
  for (index_t n = 0; n < p.n; ++n)
    for (index_t g = 0; g < G; ++g)
      for (index_t m = 0; m < OCg; ++m)
        for (index_t c = 0; c < Cg; ++c)
          for (index_t a = 0; a < p.kh; ++a)
            for (index_t b = 0; b < p.kw; ++b) {
              const ld wv = ld(w[wi(g, m, c, a, b)]);
              if (!tr) {
                for (index_t oh = 0; oh < OH; ++oh)
                  for (index_t ow = 0; ow < OW; ++ow) {
                    const index_t ih = oh * p.sh - p.ph + a * p.dh, iw = ow * p.sw - p.pw + b * p.dw;
                    if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                    const ld t = ld(x[xi(n, g * Cg + c, ih, iw)]) * wv;
                    r.value[oi(n, g * OCg + m, oh, ow)] += t;
                    r.magnitude[oi(n, g * OCg + m, oh, ow)] += std::fabs(t);
                  }
              } else { // each input element scatters into the outputs its kernel covers
                for (index_t ih = 0; ih < p.h; ++ih)
                  for (index_t iw = 0; iw < p.w; ++iw) {
                    const index_t oh = ih * p.sh - p.ph + a * p.dh, ow = iw * p.sw - p.pw + b * p.dw;
                    if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                    const ld t = ld(x[xi(n, g * Cg + c, ih, iw)]) * wv;
                    r.value[oi(n, g * OCg + m, oh, ow)] += t;
                    r.magnitude[oi(n, g * OCg + m, oh, ow)] += std::fabs(t);
                  }
              }
            }
  return r;
}

// |y - ref| <= terms * eps * sum|terms| (the classic bound for a dot product) for every element.
template <class T, class Y>
void require_close(const Y& y, const reference& r, const char* what) {
  const ld eps = ld(std::numeric_limits<T>::epsilon());
  REQUIRE(index_t(r.value.size()) == index_t(y.size()));
  index_t bad = 0, first = -1;
  const T* p = y.data();
  for (std::size_t i = 0; i < r.value.size(); ++i)
    if (!(std::fabs(ld(p[i]) - r.value[i]) <= ld(r.terms + 2) * eps * r.magnitude[i] + ld(1e-30))) {
      if (first < 0) first = index_t(i);
      ++bad;
    }
  INFO(what << ": " << bad << " elements off, first at " << first);
  REQUIRE(bad == 0);
}

template <conv_layout L>
constexpr auto layout_tag = std::conditional_t<L == conv_layout::nhwc, nhwc_t, nchw_t>{};

// Shapes of one case.
template <conv_case P, bool Nhwc>
using x_shape = std::conditional_t<Nhwc, shape<P.n, P.h, P.w, P.c>, shape<P.n, P.c, P.h, P.w>>;
} // namespace conv_testing
