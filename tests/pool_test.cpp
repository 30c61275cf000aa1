// Sliding windows (core/windows.hpp) checked element by element against index arithmetic written here;
// how they fold (a leaf with window strides; a view of a pad stays one view) and compose with other
// views; pooling's plan (no buffer, one nest with elementwise neighbours); max pool's NaN and -inf
// handling; adaptive and global average pooling against long-double loops. The parameter grids of
// max_pool2d and avg_pool2d are in pool_max_test.cpp and pool_avg_test.cpp.
#include "pool_test_support.hpp"

#include <array>

using namespace pool_test;

namespace {
template <class T, class S>
Tensor<T, S> iota(T start = T(0)) {
  Tensor<T, S> t;
  T v = start;
  for (auto& e : t) e = v, v = v + T(1);
  return t;
}

// Checks windows<K, St, D>(x) of an NCHW [N, C, H, W] tensor against x[n, c, oh*s + kh*d, ow*s + kw*d].
template <hw K, hw St, hw D, index_t N, index_t C, index_t H, index_t W>
void check_windows_nchw() {
  const auto x = iota<float, shape<N, C, H, W>>();
  auto v = windows<K, St, D>(x);
  static_assert(detail::is_leaf_v<decltype(v)>, "windows of a tensor fold into a leaf's strides");
  using O = typename decltype(v)::shape_type;
  const index_t oh = (H - D.h * (K.h - 1) - 1) / St.h + 1, ow = (W - D.w * (K.w - 1) - 1) / St.w + 1;
  REQUIRE(O::dims == std::array<index_t, 6>{N, C, oh, ow, K.h, K.w});
  Tensor<float, O> y = v;
  int bad = 0;
  for (index_t n = 0; n < N; ++n)
    for (index_t c = 0; c < C; ++c)
      for (index_t i = 0; i < oh; ++i)
        for (index_t j = 0; j < ow; ++j)
          for (index_t a = 0; a < K.h; ++a)
            for (index_t b = 0; b < K.w; ++b) bad += y(n, c, i, j, a, b) != x(n, c, i * St.h + a * D.h, j * St.w + b * D.w);
  CHECK(bad == 0);
}
} // namespace

TEST_CASE("windows of an NCHW tensor read x[n, c, oh*s + kh*d, ow*s + kw*d]", "[pool][views]") {
  check_windows_nchw<hw{2}, hw{2}, hw{1}, 2, 3, 6, 7>();
  check_windows_nchw<hw{3}, hw{1}, hw{1}, 1, 2, 5, 5>();
  check_windows_nchw<hw{3, 2}, hw{2, 3}, hw{2, 1}, 2, 1, 9, 8>();
  check_windows_nchw<hw{1}, hw{3}, hw{1}, 1, 1, 7, 7>();
}

TEST_CASE("windows of an NHWC tensor are [N, OH, OW, C, KH, KW] and fold into strides", "[pool][views]") {
  const auto x = iota<float, shape<2, 7, 6, 3>>();
  auto v = windows<hw{3, 2}, 2, hw{1, 2}>(x, nhwc);
  static_assert(detail::is_leaf_v<decltype(v)>);
  // The strides the view promises: (sN, SH*sH, SW*sW, sC, DH*sH, DW*sW) with (sN, sH, sW, sC) = (126, 18, 3, 1).
  static_assert(decltype(v)::strides == std::array<index_t, 6>{126, 36, 6, 1, 18, 6});
  using O = typename decltype(v)::shape_type;
  static_assert(std::is_same_v<O, shape<2, 3, 2, 3, 3, 2>>);
  Tensor<float, O> y = v;
  int bad = 0;
  for (index_t n = 0; n < 2; ++n)
    for (index_t i = 0; i < 3; ++i)
      for (index_t j = 0; j < 2; ++j)
        for (index_t c = 0; c < 3; ++c)
          for (index_t a = 0; a < 3; ++a)
            for (index_t b = 0; b < 2; ++b) bad += y(n, i, j, c, a, b) != x(n, i * 2 + a, j * 2 + b * 2, c);
  CHECK(bad == 0);
}

TEST_CASE("windows compose with other views and push through elementwise nodes", "[pool][views]") {
  const auto x = iota<float, shape<1, 2, 6, 6>>();
  // A view of the windows: permuting the window axes in front is still one strided leaf.
  auto p = permute<0, 1, 4, 5, 2, 3>(windows<2, 2>(x));
  static_assert(detail::is_leaf_v<decltype(p)>);
  Tensor<float, shape<1, 2, 2, 2, 3, 3>> yp = p;
  // Windows of a view: NHWC windows of a permuted NCHW tensor read the same elements as NCHW windows.
  auto q = windows<2, 2>(permute<0, 2, 3, 1>(x), nhwc);
  static_assert(detail::is_leaf_v<decltype(q)>);
  Tensor<float, shape<1, 3, 3, 2, 2, 2>> yq = q;
  // A slice of the windows (every other window position): still a leaf.
  auto s = slice<whole, whole, range<0, 3, 2>>(windows<2, 1>(x));
  static_assert(detail::is_leaf_v<decltype(s)>);
  Tensor<float, shape<1, 2, 2, 5, 2, 2>> ys = s;
  // Windows of an elementwise expression are the expression of the windows.
  Tensor<float, shape<1, 2, 5, 5, 2, 2>> ye = windows<2>(x * 2.0f + 1.0f);
  // A reshape the strides cannot express stays a view of the windows.
  Tensor<float, shape<2, 9, 4>> yr = reshape<2, 9, 4>(windows<2, 2>(x));
  int bad = 0;
  for (index_t c = 0; c < 2; ++c)
    for (index_t a = 0; a < 2; ++a)
      for (index_t b = 0; b < 2; ++b)
        for (index_t i = 0; i < 3; ++i)
          for (index_t j = 0; j < 3; ++j) {
            const float want = x(0, c, 2 * i + a, 2 * j + b);
            bad += yp(0, c, a, b, i, j) != want;
            bad += yq(0, i, j, c, a, b) != want;
            bad += yr(c, i * 3 + j, a * 2 + b) != want;
          }
  for (index_t c = 0; c < 2; ++c)
    for (index_t i = 0; i < 5; ++i)
      for (index_t j = 0; j < 5; ++j)
        for (index_t a = 0; a < 2; ++a)
          for (index_t b = 0; b < 2; ++b) {
            bad += ye(0, c, i, j, a, b) != x(0, c, i + a, j + b) * 2.0f + 1.0f;
            if (i < 2) bad += ys(0, c, i, j, a, b) != x(0, c, 2 * i + a, j + b);
          }
  CHECK(bad == 0);
}

TEST_CASE("windows of a pad are one view of the pad node, composed with further views", "[pool][views]") {
  const auto x = iota<float, shape<1, 1, 4, 5>>(1.0f);
  auto w = windows<3, 2>(pad<0, 0, 0, 0, 1, 1, 1, 1>(x, -1.0f));
  using V = decltype(w);
  static_assert(plan::is_view_node_v<V> && !plan::is_view_node_v<decltype(w.arg)>);
  static_assert(detail::is_linear_map_v<typename V::map_type>);
  // Permuted again: the two maps compose into one; the operand is still the pad node itself.
  auto pw = permute<0, 1, 4, 5, 2, 3>(w);
  static_assert(plan::is_view_node_v<decltype(pw)> && !plan::is_view_node_v<decltype(pw.arg)>);
  Tensor<float, shape<1, 1, 2, 3, 3, 3>> y = w; // padded 6 x 7: 2 x 3 windows
  Tensor<float, shape<1, 1, 3, 3, 2, 3>> yp = pw;
  auto padded = [&](index_t h, index_t ww) { return h < 1 || h > 4 || ww < 1 || ww > 5 ? -1.0f : x(0, 0, h - 1, ww - 1); };
  int bad = 0;
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t a = 0; a < 3; ++a)
        for (index_t b = 0; b < 3; ++b) {
          bad += y(0, 0, i, j, a, b) != padded(2 * i + a, 2 * j + b);
          bad += yp(0, 0, a, b, i, j) != padded(2 * i + a, 2 * j + b);
        }
  CHECK(bad == 0);
}

namespace {
Tensor<float, shape<2, 4, 8, 8>> img;
Tensor<float, shape<2, 8, 8, 4>> img_nhwc;
template <class E>
constexpr bool one_nest_no_buffer = plan_of<E>::nests == 1 && plan_of<E>::buffers == 0;
} // namespace

// No window buffer: a pool is one reduction over a strided view, fused with elementwise neighbours.
static_assert(one_nest_no_buffer<decltype(max_pool2d<2>(img))>);
static_assert(one_nest_no_buffer<decltype(max_pool2d<3, 2, 1>(img))>);
static_assert(one_nest_no_buffer<decltype(max_pool2d<3, 2, 1>(img_nhwc, nhwc))>);
static_assert(one_nest_no_buffer<decltype(relu(max_pool2d<2>(img)))>);
static_assert(one_nest_no_buffer<decltype(max_pool2d<2>(relu(img)))>);
static_assert(one_nest_no_buffer<decltype(max_pool2d<3, 2, 1>(relu(img * 2.0f + 1.0f)) + 1.0f)>);
static_assert(one_nest_no_buffer<decltype(relu(avg_pool2d<3, 2, 1, false, false>(img)))>);
static_assert(one_nest_no_buffer<decltype(adaptive_avg_pool2d<3>(img) * 2.0f)>);
// Rows of at least one vector run on the vectorised window rows (cpu/window_rows.hpp), fused consumers too.
namespace {
Tensor<float, shape<2, 4, 9, 40>> wide;
Tensor<double, shape<2, 9, 11, 12>> wide_nhwc;
} // namespace
static_assert(cpu::window_rooted<decltype(max_pool2d<3, 2, 1>(wide))>());
static_assert(cpu::window_rooted<decltype(relu(max_pool2d<2>(wide)) * 2.0f)>());
static_assert(cpu::window_rooted<decltype(max_pool2d<3, 2, 1>(relu(wide)))>());
static_assert(cpu::window_rooted<decltype(avg_pool2d<3, 2, 1, false, false>(wide_nhwc, nhwc))>());
static_assert(!cpu::window_rooted<decltype(max_pool2d<3>(img))>()); // OW = 2: fewer outputs than lanes
// The unpadded pool reads the tensor through window strides: its operand is a leaf, no pad, no view node.
static_assert(detail::is_leaf_v<decltype(max_pool2d<2>(img).arg)>);

TEST_CASE("pools fused with elementwise neighbours give the pooled values", "[pool][plan]") {
  image<float, nchw_t, 2, 3, 7, 9> x{5};
  Tensor<float, shape<2, 3, 4, 5>> a = relu(max_pool2d<3, 2, 1>(x.t) - 0.5f);
  Tensor<float, shape<2, 3, 4, 5>> b = max_pool2d<3, 2, 1>(relu(x.t - 0.5f));
  const geom g{3, 3, 2, 2, 1, 1, 1, 1, false};
  int bad = 0;
  for (index_t n = 0; n < 2; ++n)
    for (index_t c = 0; c < 3; ++c)
      for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 5; ++j) {
          const long double m = ref_max(x, n, c, i, j, g, 7, 9);
          const float want = float(std::max<long double>(m - 0.5L, 0));
          bad += a(n, c, i, j) != want;
          bad += b(n, c, i, j) != want;
        }
  CHECK(bad == 0);
}

TEST_CASE("wide rows: pools with elementwise neighbours on the vectorised path", "[pool][plan]") {
  image<float, nchw_t, 2, 3, 7, 45> x{6};
  Tensor<float, shape<2, 3, 4, 23>> a = relu(max_pool2d<3, 2, 1>(x.t) - 0.5f);
  Tensor<float, shape<2, 3, 4, 23>> b = max_pool2d<3, 2, 1>(relu(x.t - 0.5f)); // windows of a pad of relu
  Tensor<float, shape<2, 3, 4, 23>> c = avg_pool2d<3, 2, 1, false, false>(x.t) * 2.0f;
  const geom g{3, 3, 2, 2, 1, 1, 1, 1, false};
  int bad = 0;
  for (index_t n = 0; n < 2; ++n)
    for (index_t ch = 0; ch < 3; ++ch)
      for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 23; ++j) {
          const float want = float(std::max<long double>(ref_max(x, n, ch, i, j, g, 7, 45) - 0.5L, 0));
          bad += a(n, ch, i, j) != want;
          bad += b(n, ch, i, j) != want;
          bad += !close(c(n, ch, i, j), 2 * ref_avg(x, n, ch, i, j, g, 7, 45, false), tolerance<float>);
        }
  CHECK(bad == 0);
  // NaN on the vectorised path: lane 17 of a 23-wide row, and a padded edge lane.
  x.set(1, 2, 3, 34, std::numeric_limits<double>::quiet_NaN());
  x.set(0, 0, 0, 0, std::numeric_limits<double>::quiet_NaN());
  Tensor<float, shape<2, 3, 4, 23>> m = max_pool2d<3, 2, 1>(x.t);
  CHECK(std::isnan(m(1, 2, 1, 17)));
  CHECK(std::isnan(m(1, 2, 2, 17)));
  CHECK(std::isnan(m(0, 0, 0, 0)));
  CHECK(!std::isnan(m(1, 2, 1, 16)));
  CHECK(!std::isnan(m(0, 0, 0, 1)));
}

TEST_CASE("max_pool2d propagates NaN and keeps -inf, as PyTorch", "[pool]") {
  {
    image<float, nchw_t, 1, 2, 4, 4> x{9};
    image<float, nhwc_t, 1, 2, 4, 4> xl{9};
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    auto set = [&](index_t c, index_t h, index_t w, float v) { x.set(0, c, h, w, v), xl.set(0, c, h, w, v); };
    set(0, 0, 0, nan);                     // NaN in window (0, 0) of channel 0, also after larger values
    set(0, 1, 1, 100.0f);
    set(0, 2, 3, nan);                     // NaN in window (1, 1)
    set(0, 3, 2, inf);                     //   ... after +inf: still NaN
    for (index_t h = 0; h < 2; ++h)        // window (0, 1) of channel 1: all -inf
      for (index_t w = 2; w < 4; ++w) set(1, h, w, -inf);
    set(1, 2, 0, inf);                     // window (1, 0) of channel 1: +inf wins
    Tensor<float, shape<1, 2, 2, 2>> y = max_pool2d<2>(x.t);
    Tensor<float, shape<1, 2, 2, 2>> yl = max_pool2d<2>(xl.t, nhwc);
    // Padded: windows over -inf padding; the corner window (0, 1) of channel 1 sees only -inf values.
    Tensor<float, shape<1, 2, 3, 3>> yp = max_pool2d<2, 2, 1>(x.t);
    const geom g2{2, 2, 2, 2, 0, 0, 1, 1, false}, gp{2, 2, 2, 2, 1, 1, 1, 1, false};
    int bad = 0;
    for (index_t c = 0; c < 2; ++c)
      for (index_t i = 0; i < 2; ++i)
        for (index_t j = 0; j < 2; ++j) {
          bad += !close(y(0, c, i, j), ref_max(x, 0, c, i, j, g2, 4, 4), 0);
          bad += !close(yl(0, i, j, c), ref_max(x, 0, c, i, j, g2, 4, 4), 0);
        }
    for (index_t c = 0; c < 2; ++c)
      for (index_t i = 0; i < 3; ++i)
        for (index_t j = 0; j < 3; ++j) bad += !close(yp(0, c, i, j), ref_max(x, 0, c, i, j, gp, 4, 4), 0);
    CHECK(bad == 0);
    CHECK(std::isnan(y(0, 0, 0, 0)));
    CHECK(std::isnan(y(0, 0, 1, 1)));
    CHECK(y(0, 1, 0, 1) == -inf);
    CHECK(y(0, 1, 1, 0) == inf);
    CHECK(yp(0, 1, 0, 2) == -inf);
  }
}

namespace {
// adaptive_avg_pool2d<OH, OW> against windows [floor(i H / OH), ceil((i + 1) H / OH)), in long double.
template <class T, class L, index_t N, index_t C, index_t H, index_t W, index_t OH, index_t OW>
void check_adaptive() {
  image<T, L, N, C, H, W> x{std::uint32_t(H * 100 + W * 10 + OH)};
  auto e = adaptive_avg_pool2d<OH, OW>(x.t, L{});
  using O = typename decltype(e)::shape_type;
  static_assert(std::is_same_v<O, std::conditional_t<std::is_same_v<L, nhwc_t>, shape<N, OH, OW, C>, shape<N, C, OH, OW>>>);
  static_assert(one_nest_no_buffer<decltype(e)>);
  Tensor<T, O> y = e;
  int bad = 0;
  for (index_t n = 0; n < N; ++n)
    for (index_t c = 0; c < C; ++c)
      for (index_t i = 0; i < OH; ++i)
        for (index_t j = 0; j < OW; ++j) {
          const auto h0 = index_t(std::floor(static_cast<long double>(i * H) / OH)), h1 = index_t(std::ceil(static_cast<long double>((i + 1) * H) / OH));
          const auto w0 = index_t(std::floor(static_cast<long double>(j * W) / OW)), w1 = index_t(std::ceil(static_cast<long double>((j + 1) * W) / OW));
          long double s = 0;
          for (index_t h = h0; h < h1; ++h)
            for (index_t w = w0; w < w1; ++w) s += x.at(n, c, h, w);
          bad += !close(pooled<L>(y, n, c, i, j), s / ((h1 - h0) * (w1 - w0)), tolerance<T>);
        }
  INFO("adaptive " << H << "x" << W << " -> " << OH << "x" << OW << (std::is_same_v<L, nhwc_t> ? " nhwc " : " nchw ") << sizeof(T) * 8);
  CHECK(bad == 0);
}
} // namespace

TEST_CASE("adaptive_avg_pool2d: uniform and uneven windows", "[pool]") {
  check_adaptive<float, nchw_t, 2, 3, 7, 10, 3, 4>();  // 7 -> 3 and 10 -> 4: uneven, overlapping windows
  check_adaptive<double, nhwc_t, 2, 3, 7, 10, 3, 4>();
  check_adaptive<float, nhwc_t, 1, 3, 5, 5, 5, 5>();   // 5 -> 5: the identity
  check_adaptive<double, nchw_t, 3, 1, 8, 6, 4, 3>();  // uniform: an avg_pool2d
  check_adaptive<float, nchw_t, 1, 2, 1, 1, 1, 1>();   // 1 -> 1
  check_adaptive<double, nhwc_t, 2, 3, 5, 7, 1, 1>();  // global
  check_adaptive<float, nchw_t, 1, 2, 5, 9, 3, 2>();   // 5 -> 3, 9 -> 2
}

TEST_CASE("global_avg_pool2d is the mean over the spatial axes, in both layouts", "[pool]") {
  image<float, nchw_t, 2, 3, 7, 9> x{3};
  image<float, nhwc_t, 2, 3, 7, 9> xl{3};
  Tensor<float, shape<2, 3>> g = global_avg_pool2d(x.t);
  Tensor<float, shape<2, 3>> gl = global_avg_pool2d(xl.t, nhwc);
  Tensor<float, shape<2, 3, 1, 1>> a = adaptive_avg_pool2d<1>(x.t);
  int bad = 0;
  for (index_t n = 0; n < 2; ++n)
    for (index_t c = 0; c < 3; ++c) {
      long double s = 0;
      for (index_t h = 0; h < 7; ++h)
        for (index_t w = 0; w < 9; ++w) s += x.at(n, c, h, w);
      bad += !close(g(n, c), s / 63, tolerance<float>) + !close(gl(n, c), s / 63, tolerance<float>) + !close(a(n, c, 0, 0), s / 63, tolerance<float>);
    }
  CHECK(bad == 0);
}

TEST_CASE("unbatched [C, H, W] and [H, W, C] inputs pool their spatial axes", "[pool]") {
  const auto x = iota<double, shape<2, 5, 6>>();
  Tensor<double, shape<2, 2, 3>> y = max_pool2d<2>(x);
  Tensor<double, shape<2, 6, 2>> yl = avg_pool2d<hw{2, 1}>(permute<1, 2, 0>(x), nhwc); // [5, 6, 2] -> [2, 6, 2]
  int bad = 0;
  for (index_t c = 0; c < 2; ++c)
    for (index_t i = 0; i < 2; ++i)
      for (index_t j = 0; j < 3; ++j) bad += y(c, i, j) != x(c, 2 * i + 1, 2 * j + 1); // iota: the bottom-right element
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 6; ++j)
      for (index_t c = 0; c < 2; ++c) bad += yl(i, j, c) != (x(c, 2 * i, j) + x(c, 2 * i + 1, j)) / 2;
  CHECK(bad == 0);
}
