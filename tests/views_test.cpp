// Views: every one checked element by element against an index computation written here, independently of
// the library's index maps; views composed with elementwise ops and reductions; views kept in `auto`;
// no copies; which views fold into a strided leaf.
#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

#include <array>
#include <cstdint>
#include <vector>

using namespace tenfold;

namespace {

// Value = row-major position (+ start), so every element names where it came from.
template <class T, class S>
Tensor<T, S> iota(T start = T(0)) {
  Tensor<T, S> t;
  T v = start;
  for (auto& e : t) e = v, v = v + T(1);
  return t;
}

template <class S>
using idx_t = std::array<index_t, S::rank>;

// Every multi-index of S in row-major order.
template <class S, class F>
void for_each_index(F&& f) {
  idx_t<S> i{};
  for (index_t l = 0; l < S::size; ++l) {
    index_t r = l;
    for (int k = S::rank - 1; k >= 0; --k) i[k] = r % S::dims[k], r /= S::dims[k];
    f(i);
  }
}

template <class S>
index_t linear(const idx_t<S>& i) {
  index_t l = 0;
  for (int k = 0; k < S::rank; ++k) l = l * S::dims[k] + i[k];
  return l;
}

template <class T, class S>
T get(const Tensor<T, S>& t, const idx_t<S>& i) {
  return t.data()[linear<S>(i)];
}

// Evaluates an expression into a tensor of its own type and shape.
template <class E>
auto evaluate(E&& e) {
  using N = detail::node_t<E>;
  Tensor<typename N::value_type, typename N::shape_type> r = std::forward<E>(e);
  return r;
}

template <class E, class S>
inline constexpr bool has_shape_v = std::is_same_v<typename detail::node_t<E>::shape_type, S>;

// Python's slice.indices() followed by range(): the positions a slice selects (CPython's algorithm).
std::vector<index_t> python_slice(index_t b, index_t e, index_t s, index_t n) {
  const bool nb = b == none, ne = e == none;
  index_t lo = s < 0 ? -1 : 0, hi = s < 0 ? n - 1 : n;
  index_t start, stop;
  if (nb) start = s < 0 ? hi : lo;
  else {
    start = b;
    if (start < 0) start = start + n < lo ? lo : start + n;
    else if (start > hi) start = hi;
  }
  if (ne) stop = s < 0 ? lo : hi;
  else {
    stop = e;
    if (stop < 0) stop = stop + n < lo ? lo : stop + n;
    else if (stop > hi) stop = hi;
  }
  std::vector<index_t> out;
  for (index_t i = start; s > 0 ? i < stop : i > stop; i += s) out.push_back(i);
  return out;
}
} // namespace

// ---- reshape -----------------------------------------------------------------------------------------
TEST_CASE("reshape, with -1, keeps row-major order", "[views]") {
  const auto a = iota<float, shape<2, 3, 4>>();
  auto r = reshape<4, -1>(a);
  STATIC_REQUIRE(has_shape_v<decltype(r), shape<4, 6>>);
  STATIC_REQUIRE(has_shape_v<decltype(reshape<-1>(a)), shape<24>>);
  STATIC_REQUIRE(has_shape_v<decltype(reshape<2, -1, 2>(a)), shape<2, 6, 2>>);
  STATIC_REQUIRE(has_shape_v<decltype(reshape<1, 24, 1>(a)), shape<1, 24, 1>>);
  const auto t = evaluate(r);
  for_each_index<shape<4, 6>>([&](auto i) { CHECK(get(t, i) == float(i[0] * 6 + i[1])); });
  const auto u = evaluate(reshape<3, 2, 2, 2>(a));
  for_each_index<shape<3, 2, 2, 2>>(
      [&](auto i) { CHECK(get(u, i) == float(((i[0] * 2 + i[1]) * 2 + i[2]) * 2 + i[3])); });
}

TEST_CASE("reshape of a contiguous operand is a leaf; of a transposed one it is an index map", "[views]") {
  Tensor<float, shape<3, 4>> a = iota<float, shape<3, 4>>();
  STATIC_REQUIRE(detail::is_leaf_v<decltype(reshape<2, 6>(a))>);
  STATIC_REQUIRE(detail::is_leaf_v<decltype(reshape<-1>(a))>);
  STATIC_REQUIRE(!detail::is_leaf_v<decltype(reshape<2, 6>(transpose(a)))>);
  STATIC_REQUIRE(!detail::is_leaf_v<decltype(reshape<-1>(transpose(a)))>);
  // Splitting or merging axes that stay adjacent in memory needs no index map, even for a view.
  STATIC_REQUIRE(detail::is_leaf_v<decltype(reshape<4, 1, 3>(transpose(a)))>);
  STATIC_REQUIRE(detail::is_leaf_v<decltype(reshape<3, 2, 2>(a))>);
  STATIC_REQUIRE(detail::is_leaf_v<decltype(reshape<3, 2, 2>(slice<whole, range<none, none, 1>>(a)))>);

  // transpose(a) is [4,3] with element (i, j) = a(j, i); its row-major order is a's column-major order.
  const auto t = evaluate(reshape<2, 6>(transpose(a)));
  for_each_index<shape<2, 6>>([&](auto i) {
    const index_t l = i[0] * 6 + i[1], r = l / 3, c = l % 3; // position in the [4,3] transpose
    CHECK(get(t, i) == a(c, r));
  });
  const auto f = evaluate(reshape<-1>(transpose(a)));
  for (index_t l = 0; l < 12; ++l) CHECK(f(l) == a(l % 3, l / 3));
  // A reshape of a flipped (negative-stride) axis that stays whole folds; across axes it cannot.
  const auto g = evaluate(reshape<12>(flip<1>(a)));
  for (index_t l = 0; l < 12; ++l) CHECK(g(l) == a(l / 4, 3 - l % 4));
  STATIC_REQUIRE(detail::is_leaf_v<decltype(reshape<3, 2, 2>(flip<1>(a)))>);
}

// A reshape the walk cannot fold into strides, over a source whose innermost axis is contiguous, is
// read in runs of that axis (cpu/reshaped_rows.hpp): whole vectors inside a run, lane by lane across two.
// Each result against the index arithmetic written out, for runs longer than a vector, shorter, not a
// multiple of one, under permutes that keep the last axis, fused with arithmetic, f64 and int.
TEST_CASE("reshape of a strided tensor: merged heads, flipped halves, runs of every length", "[views]") {
  // attention's heads merged back: [B, H, T, D] -> [B, T, H, D] -> [B*T, H*D]
  Tensor<float, shape<3, 4, 20, 32>> x = iota<float, shape<3, 4, 20, 32>>();
  using M = decltype(reshape<60, 128>(permute<0, 2, 1, 3>(x)));
  STATIC_REQUIRE(cpu::reshaped_leaf<M>());
  Tensor<float, shape<60, 128>> merged = reshape<60, 128>(permute<0, 2, 1, 3>(x));
  for_each_index<shape<60, 128>>([&](auto i) {
    CHECK(get(merged, i) == x(i[0] / 20, i[1] / 32, i[0] % 20, i[1] % 32));
  });
  // RoPE's rotate_half: the last axis as [2, D/2], the halves exchanged, read back as [..., D]; under a
  // permute of the other axes, and times a tensor
  Tensor<float, shape<2, 5, 48>> y = iota<float, shape<2, 5, 48>>();
  Tensor<float, shape<5, 2, 48>> w = iota<float, shape<5, 2, 48>>(1.0f);
  const auto half = permute<1, 0, 2>(reshape<2, 5, 48>(flip<2>(reshape<2, 5, 2, 24>(y))));
  STATIC_REQUIRE(cpu::reshaped_leaf<std::remove_cvref_t<decltype(half)>>());
  Tensor<float, shape<5, 2, 48>> r = half * w + 1.0f;
  for_each_index<shape<5, 2, 48>>([&](auto i) {
    const index_t e = i[2] < 24 ? i[2] + 24 : i[2] - 24;
    CHECK(get(r, i) == y(i[1], i[0], e) * get(w, i) + 1.0f);
  });
  // runs of 5 and of 3 (every vector straddles), f64 and int
  Tensor<double, shape<4, 6, 5>> a = iota<double, shape<4, 6, 5>>();
  Tensor<double, shape<6, 20>> ra = reshape<6, 20>(permute<1, 0, 2>(a));
  for_each_index<shape<6, 20>>([&](auto i) { CHECK(get(ra, i) == a(i[1] / 5, i[0], i[1] % 5)); });
  Tensor<std::int32_t, shape<7, 2, 3>> b = iota<std::int32_t, shape<7, 2, 3>>();
  Tensor<std::int32_t, shape<2, 21>> rb = reshape<2, 21>(permute<1, 0, 2>(b)) * 3;
  for_each_index<shape<2, 21>>([&](auto i) { CHECK(get(rb, i) == 3 * b(i[1] / 3, i[0], i[1] % 3)); });
  // large enough for the threaded path
  Tensor<float, shape<8, 16, 64, 24>> big = iota<float, shape<8, 16, 64, 24>>();
  Tensor<float, shape<512, 384>> rbig = reshape<512, 384>(permute<0, 2, 1, 3>(big));
  for_each_index<shape<512, 384>>([&](auto i) {
    if (get(rbig, i) != big(i[0] / 64, i[1] / 24, i[0] % 64, i[1] % 24)) FAIL("merged heads differ at " << i[0] << ", " << i[1]);
  });
}

// ---- permute, transpose, swapaxes ------------------------------------------------------------------
TEST_CASE("permute, transpose and swapaxes", "[views]") {
  const auto a = iota<float, shape<2, 3, 4>>();
  const auto p = evaluate(permute<2, 0, 1>(a));
  STATIC_REQUIRE(std::is_same_v<decltype(p), const Tensor<float, shape<4, 2, 3>>>);
  for_each_index<shape<4, 2, 3>>([&](auto i) { CHECK(get(p, i) == a(i[1], i[2], i[0])); });
  const auto q = evaluate(permute<-1, 1, 0>(a));
  for_each_index<shape<4, 3, 2>>([&](auto i) { CHECK(get(q, i) == a(i[2], i[1], i[0])); });

  const auto t = evaluate(transpose(a));
  STATIC_REQUIRE(std::is_same_v<decltype(t), const Tensor<float, shape<4, 3, 2>>>);
  for_each_index<shape<4, 3, 2>>([&](auto i) { CHECK(get(t, i) == a(i[2], i[1], i[0])); });
  const auto m = iota<float, shape<3, 5>>();
  const auto mt = evaluate(transpose(m));
  for_each_index<shape<5, 3>>([&](auto i) { CHECK(get(mt, i) == m(i[1], i[0])); });
  const auto tt = evaluate(transpose(transpose(m)));
  for_each_index<shape<3, 5>>([&](auto i) { CHECK(get(tt, i) == get(m, i)); });
  STATIC_REQUIRE(detail::is_leaf_v<decltype(transpose(transpose(m)))>);

  const auto s = evaluate(swapaxes<0, -1>(a));
  STATIC_REQUIRE(std::is_same_v<decltype(s), const Tensor<float, shape<4, 3, 2>>>);
  for_each_index<shape<4, 3, 2>>([&](auto i) { CHECK(get(s, i) == a(i[2], i[1], i[0])); });
  const auto s12 = evaluate(swapaxes<1, 2>(a));
  for_each_index<shape<2, 4, 3>>([&](auto i) { CHECK(get(s12, i) == a(i[0], i[2], i[1])); });
}

TEST_CASE("permutes that move the innermost axis, in blocks along the axis the operand is contiguous on", "[views]") {
  // [N, H, W, C] -> [C, H, W, N] (a convolution's weight gradient reads its input so): C is contiguous in
  // the operand and three axes from the destination's last; the nest takes C as its rows (cpu/blocks.hpp
  // swap_axes). Extents that are not multiples of a block (17 x 19), an elementwise op over the permuted
  // operand and a broadcast one, doubles, and an axis too short for a block (3 channels).
  const auto x = iota<float, shape<19, 5, 3, 17>>();
  const auto y = evaluate(permute<3, 1, 2, 0>(x));
  for_each_index<shape<17, 5, 3, 19>>([&](auto i) { CHECK(get(y, i) == x(i[3], i[1], i[2], i[0])); });
  const auto bias = iota<float, shape<19>>();
  const auto z = evaluate(permute<3, 1, 2, 0>(x) * 2.0f + bias);
  for_each_index<shape<17, 5, 3, 19>>([&](auto i) { CHECK(get(z, i) == x(i[3], i[1], i[2], i[0]) * 2.0f + bias(i[3])); });
  const auto xd = iota<double, shape<33, 2, 40>>();
  const auto yd = evaluate(permute<2, 1, 0>(xd)); // [40, 2, 33]: the operand contiguous along the first axis
  for_each_index<shape<40, 2, 33>>([&](auto i) { CHECK(get(yd, i) == xd(i[2], i[1], i[0])); });
  const auto rgb = iota<float, shape<4, 6, 7, 3>>(); // NHWC -> NCHW with 3 channels: rows as before
  const auto nchw = evaluate(permute<0, 3, 1, 2>(rgb));
  for_each_index<shape<4, 3, 6, 7>>([&](auto i) { CHECK(get(nchw, i) == rgb(i[0], i[2], i[3], i[1])); });
  const auto big = iota<float, shape<64, 14, 14, 16>>(); // the CNN's, on the threads
  const auto bt = evaluate(permute<3, 1, 2, 0>(big));
  bool same = true;
  for_each_index<shape<16, 14, 14, 64>>([&](auto i) { same = same && get(bt, i) == big(i[3], i[1], i[2], i[0]); });
  CHECK(same);
}

// ---- broadcast_to ------------------------------------------------------------------------------------
TEST_CASE("broadcast_to repeats extent-1 and missing leading axes", "[views]") {
  const auto c = iota<float, shape<3, 1>>(1);
  const auto b = evaluate(broadcast_to<shape<2, 3, 4>>(c));
  for_each_index<shape<2, 3, 4>>([&](auto i) { CHECK(get(b, i) == c(i[1], 0)); });
  const auto r = iota<int, shape<4>>();
  const auto br = evaluate(broadcast_to<shape<3, 4>>(r));
  for_each_index<shape<3, 4>>([&](auto i) { CHECK(get(br, i) == r(i[1])); });
  STATIC_REQUIRE(detail::is_leaf_v<decltype(broadcast_to<shape<3, 4>>(r))>);
  STATIC_REQUIRE(decltype(broadcast_to<shape<3, 4>>(r))::strides == std::array<index_t, 2>{0, 1});
}

// ---- slice and flip --------------------------------------------------------------------------------
namespace {
template <index_t B, index_t E, index_t St>
void check_slice_1d() {
  constexpr index_t n = 7;
  const auto a = iota<int, shape<n>>();
  const auto v = slice<range<B, E, St>>(a);
  const auto want = python_slice(B, E, St, n);
  using S = typename decltype(v)::shape_type;
  INFO("slice(" << B << ", " << E << ", " << St << ")");
  REQUIRE(S::dims[0] == index_t(want.size()));
  const auto t = evaluate(v);
  for (std::size_t k = 0; k < want.size(); ++k) CHECK(t.data()[k] == a(want[k]));
}
} // namespace

TEST_CASE("slice follows Python: negative indices, negative steps, clamping", "[views]") {
  check_slice_1d<none, none, 1>();
  check_slice_1d<1, 5, 1>();
  check_slice_1d<1, 6, 2>();
  check_slice_1d<-3, none, 1>();
  check_slice_1d<none, -2, 1>();
  check_slice_1d<-100, 100, 3>();   // clamped at both ends
  check_slice_1d<5, 2, 1>();        // empty
  check_slice_1d<none, none, -1>(); // reversed
  check_slice_1d<5, 1, -1>();
  check_slice_1d<-1, none, -2>();
  check_slice_1d<100, -100, -3>(); // clamped, backwards
  check_slice_1d<-2, -6, -2>();
  check_slice_1d<2, 5, -1>(); // empty
  check_slice_1d<6, 6, 1>();
  check_slice_1d<none, 100, 10>();

  const auto a = iota<float, shape<4, 5, 6>>();
  const auto v = evaluate(slice<range<1, 3>, range<none, none, -2>, range<-4, -1, 2>>(a));
  STATIC_REQUIRE(std::is_same_v<decltype(v), const Tensor<float, shape<2, 3, 2>>>);
  const auto r0 = python_slice(1, 3, 1, 4), r1 = python_slice(none, none, -2, 5), r2 = python_slice(-4, -1, 2, 6);
  for_each_index<shape<2, 3, 2>>([&](auto i) { CHECK(get(v, i) == a(r0[i[0]], r1[i[1]], r2[i[2]])); });
  // Missing trailing axes are whole.
  const auto w = evaluate(slice<range<-1, none, -1>>(a));
  for_each_index<shape<4, 5, 6>>([&](auto i) { CHECK(get(w, i) == a(3 - i[0], i[1], i[2])); });
  STATIC_REQUIRE(detail::is_leaf_v<decltype(slice<range<1, 3>, whole, range<none, none, -1>>(a))>);
}

TEST_CASE("flip reverses the listed axes (all when none are listed)", "[views]") {
  const auto a = iota<float, shape<3, 4>>();
  const auto f0 = evaluate(flip<0>(a));
  const auto f1 = evaluate(flip<-1>(a));
  const auto fa = evaluate(flip(a));
  const auto f01 = evaluate(flip<0, 1>(a));
  for_each_index<shape<3, 4>>([&](auto i) {
    CHECK(get(f0, i) == a(2 - i[0], i[1]));
    CHECK(get(f1, i) == a(i[0], 3 - i[1]));
    CHECK(get(fa, i) == a(2 - i[0], 3 - i[1]));
    CHECK(get(f01, i) == get(fa, i));
  });
  const auto ff = evaluate(flip<1>(flip<1>(a)));
  for_each_index<shape<3, 4>>([&](auto i) { CHECK(get(ff, i) == get(a, i)); });
}

// ---- squeeze, unsqueeze ----------------------------------------------------------------------------
TEST_CASE("squeeze and unsqueeze", "[views]") {
  const auto a = iota<float, shape<1, 3, 1, 2>>();
  STATIC_REQUIRE(has_shape_v<decltype(squeeze(a)), shape<3, 2>>);
  STATIC_REQUIRE(has_shape_v<decltype(squeeze<0>(a)), shape<3, 1, 2>>);
  STATIC_REQUIRE(has_shape_v<decltype(squeeze<-2>(a)), shape<1, 3, 2>>);
  STATIC_REQUIRE(has_shape_v<decltype(squeeze<0, 2>(a)), shape<3, 2>>);
  const auto s = evaluate(squeeze(a));
  for_each_index<shape<3, 2>>([&](auto i) { CHECK(get(s, i) == a(0, i[0], 0, i[1])); });
  const auto s2 = evaluate(squeeze<2>(a));
  for_each_index<shape<1, 3, 2>>([&](auto i) { CHECK(get(s2, i) == a(0, i[1], 0, i[2])); });

  const auto b = iota<float, shape<3, 2>>();
  STATIC_REQUIRE(has_shape_v<decltype(unsqueeze<0>(b)), shape<1, 3, 2>>);
  STATIC_REQUIRE(has_shape_v<decltype(unsqueeze<1>(b)), shape<3, 1, 2>>);
  STATIC_REQUIRE(has_shape_v<decltype(unsqueeze<2>(b)), shape<3, 2, 1>>);
  STATIC_REQUIRE(has_shape_v<decltype(unsqueeze<-1>(b)), shape<3, 2, 1>>);
  STATIC_REQUIRE(has_shape_v<decltype(unsqueeze<-3>(b)), shape<1, 3, 2>>);
  const auto u = evaluate(unsqueeze<1>(b));
  for_each_index<shape<3, 1, 2>>([&](auto i) { CHECK(get(u, i) == b(i[0], i[2])); });
  const auto u2 = evaluate(unsqueeze<-1>(b));
  for_each_index<shape<3, 2, 1>>([&](auto i) { CHECK(get(u2, i) == b(i[0], i[1])); });
  const auto back = evaluate(squeeze<1>(unsqueeze<1>(b)));
  for_each_index<shape<3, 2>>([&](auto i) { CHECK(get(back, i) == get(b, i)); });
}

// ---- pad -------------------------------------------------------------------------------------------
TEST_CASE("pad adds a constant border, before and after per axis", "[views]") {
  const auto a = iota<float, shape<2, 3>>(1);
  auto p = pad<1, 2, 0, 3>(a, -5.0f);
  STATIC_REQUIRE(has_shape_v<decltype(p), shape<5, 6>>);
  const auto t = evaluate(p);
  for_each_index<shape<5, 6>>([&](auto i) {
    const index_t r = i[0] - 1, c = i[1];
    CHECK(get(t, i) == (r >= 0 && r < 2 && c < 3 ? a(r, c) : -5.0f));
  });
  const auto z = evaluate(pad<2, 1>(iota<int, shape<3>>(7))); // default value 0
  CHECK(std::vector<int>(z.begin(), z.end()) == std::vector<int>{0, 0, 7, 8, 9, 0});
  const auto same = evaluate(pad<0, 0, 0, 0>(a));
  for_each_index<shape<2, 3>>([&](auto i) { CHECK(get(same, i) == get(a, i)); });
  // The fill value converts to the operand's element type.
  Tensor<bool, shape<2>> m{true, false};
  const auto pm = evaluate(pad<1, 1>(m, 1));
  CHECK(std::vector<bool>(pm.begin(), pm.end()) == std::vector<bool>{true, true, false, true});
  CHECK(detail::str<decltype(p)>() == "pad(float32[2,3])");
}

// A pad is written a row at a time along its last axis (cpu/window_rows.hpp, make_bare_pad_row): whole
// vectors inside, the fill outside, partial vectors at the edges; rows in the padding of a leading axis
// are all fill. Rows of 44 and 21 take every case on 8 and 16 lanes.
TEST_CASE("pad of wide rows, of an expression and of a strided view, written a row at a time", "[views]") {
  const auto a = iota<float, shape<3, 5, 37>>(1);
  const auto p = evaluate(pad<1, 2, 0, 1, 3, 4>(a, -2.5f));
  STATIC_REQUIRE(has_shape_v<decltype(p), shape<6, 6, 44>>);
  for_each_index<shape<6, 6, 44>>([&](auto i) {
    const index_t b = i[0] - 1, r = i[1], c = i[2] - 3;
    INFO(i[0] << ", " << i[1] << ", " << i[2]);
    REQUIRE(get(p, i) == (b >= 0 && b < 3 && r < 5 && c >= 0 && c < 37 ? a(b, r, c) : -2.5f));
  });
  const auto e = evaluate(pad<0, 0, 2, 1, 5, 0>(a * 2.0f + 1.0f)); // an expression: [3, 8, 42]
  for_each_index<shape<3, 8, 42>>([&](auto i) {
    const index_t r = i[1] - 2, c = i[2] - 5;
    REQUIRE(get(e, i) == (r >= 0 && r < 5 && c >= 0 ? a(i[0], r, c) * 2.0f + 1.0f : 0.0f));
  });
  // A column-strided view (every other element of each row): its rows are read with a stride.
  const auto t = evaluate(pad<0, 0, 1, 1, 2, 0>(slice<whole, whole, range<0, 37, 2>>(a), 9.0f)); // [3, 7, 21]
  for_each_index<shape<3, 7, 21>>([&](auto i) {
    const index_t r = i[1] - 1, c = i[2] - 2;
    REQUIRE(get(t, i) == (r >= 0 && r < 5 && c >= 0 ? a(i[0], r, 2 * c) : 9.0f));
  });
  const auto n = evaluate(pad<1, 0, 0, 19>(iota<int, shape<2, 30>>(3), -1)); // integers: [3, 49]
  for_each_index<shape<3, 49>>([&](auto i) {
    REQUIRE(get(n, i) == (i[0] >= 1 && i[1] < 30 ? 3 + (i[0] - 1) * 30 + i[1] : -1));
  });
}

// An operand broadcast along every axis but a contiguous last one of 64 bytes or a multiple (a bias, a
// per-channel statistic) lets the run span all axes, reading element j at j % E (cpu/rows.hpp,
// periodic rows). Against loops: f32, f64, int32, a period not a multiple of 64 bytes (rows), a
// reduction over the leading axes, and a conversion.
TEST_CASE("operands broadcast over the leading axes are read as periodic runs", "[views]") {
  const auto x = iota<float, shape<3, 5, 7, 32>>(1);
  const auto b = iota<float, shape<32>>(-7);
  const auto y = evaluate(x * 0.5f + broadcast_to<shape<3, 5, 7, 32>>(b) * broadcast_to<shape<3, 5, 7, 32>>(b));
  for_each_index<shape<3, 5, 7, 32>>([&](auto i) { REQUIRE(get(y, i) == get(x, i) * 0.5f + b(i[3]) * b(i[3])); });
  const auto xd = iota<double, shape<4, 3, 8>>(2);
  const auto bd = iota<double, shape<8>>(1);
  const auto yd = evaluate(xd / broadcast_to<shape<4, 3, 8>>(bd));
  for_each_index<shape<4, 3, 8>>([&](auto i) { REQUIRE(get(yd, i) == get(xd, i) / bd(i[2])); });
  const auto xi = iota<std::int32_t, shape<5, 16>>(3);
  const auto bi = iota<std::int32_t, shape<16>>(-20);
  const auto yi = evaluate(xi - broadcast_to<shape<5, 16>>(bi));
  for_each_index<shape<5, 16>>([&](auto i) { REQUIRE(get(yi, i) == get(xi, i) - bi(i[1])); });
  const auto x24 = iota<float, shape<6, 24>>(0);
  const auto b24 = iota<float, shape<24>>(5);
  const auto y24 = evaluate(x24 + broadcast_to<shape<6, 24>>(b24)); // 96 bytes: a row at a time
  for_each_index<shape<6, 24>>([&](auto i) { REQUIRE(get(y24, i) == get(x24, i) + b24(i[1])); });
  Tensor<double, shape<>> s = sum(x * broadcast_to<shape<3, 5, 7, 32>>(b)); // one run over every axis
  double expect = 0;
  for_each_index<shape<3, 5, 7, 32>>([&](auto i) { expect += double(get(x, i) * b(i[3])); });
  CHECK(s() == Approx(expect).epsilon(1e-6));
  Tensor<double, shape<3, 5, 7, 32>> wide = x + broadcast_to<shape<3, 5, 7, 32>>(b); // converted in the store
  for_each_index<shape<3, 5, 7, 32>>([&](auto i) { REQUIRE(get(wide, i) == double(get(x, i) + b(i[3]))); });
}

// ---- concat, stack, split ----------------------------------------------------------------------------
TEST_CASE("concat lays operands end to end along one axis", "[views]") {
  const auto a = iota<float, shape<2, 3>>(0);
  const auto b = iota<float, shape<2, 1>>(100);
  const auto c = iota<float, shape<2, 2>>(200);
  auto cat = concat<1>(a, b, c);
  STATIC_REQUIRE(has_shape_v<decltype(cat), shape<2, 6>>);
  const auto t = evaluate(cat);
  for_each_index<shape<2, 6>>([&](auto i) {
    const index_t r = i[0], k = i[1];
    CHECK(get(t, i) == (k < 3 ? a(r, k) : k < 4 ? b(r, k - 3) : c(r, k - 4)));
  });
  const auto d = iota<float, shape<3, 3>>(50);
  const auto t0 = evaluate(concat<-2>(a, d));
  STATIC_REQUIRE(std::is_same_v<decltype(t0), const Tensor<float, shape<5, 3>>>);
  for_each_index<shape<5, 3>>([&](auto i) { CHECK(get(t0, i) == (i[0] < 2 ? a(i[0], i[1]) : d(i[0] - 2, i[1]))); });
  // One operand: the operand itself. Empty operands are allowed.
  STATIC_REQUIRE(detail::is_leaf_v<decltype(concat<0>(a))>);
  Tensor<float, shape<0, 3>> none_rows;
  const auto t1 = evaluate(concat<0>(none_rows, a, none_rows));
  for_each_index<shape<2, 3>>([&](auto i) { CHECK(get(t1, i) == get(a, i)); });
  // Element types promote as in NumPy.
  const auto n = iota<int, shape<2, 2>>(7);
  auto mixed = concat<1>(n, c);
  STATIC_REQUIRE(std::is_same_v<typename decltype(mixed)::value_type, float>);
  const auto tm = evaluate(mixed);
  CHECK(tm(1, 1) == 10.0f);
  CHECK(tm(1, 3) == 203.0f);
  CHECK(detail::str<decltype(cat)>() == "concat(float32[2,3], float32[2,1], float32[2,2])");
}

TEST_CASE("stack joins same-shaped operands along a new axis", "[views]") {
  const auto a = iota<float, shape<2, 3>>(0);
  const auto b = iota<float, shape<2, 3>>(10);
  const auto c = iota<float, shape<2, 3>>(20);
  const auto s0 = evaluate(stack<0>(a, b, c));
  STATIC_REQUIRE(std::is_same_v<decltype(s0), const Tensor<float, shape<3, 2, 3>>>);
  const auto s1 = evaluate(stack<1>(a, b, c));
  STATIC_REQUIRE(std::is_same_v<decltype(s1), const Tensor<float, shape<2, 3, 3>>>);
  const auto sl = evaluate(stack<-1>(a, b, c));
  STATIC_REQUIRE(std::is_same_v<decltype(sl), const Tensor<float, shape<2, 3, 3>>>);
  const Tensor<float, shape<2, 3>>* src[] = {&a, &b, &c};
  for_each_index<shape<3, 2, 3>>([&](auto i) { CHECK(get(s0, i) == (*src[i[0]])(i[1], i[2])); });
  for_each_index<shape<2, 3, 3>>([&](auto i) { CHECK(get(s1, i) == (*src[i[1]])(i[0], i[2])); });
  for_each_index<shape<2, 3, 3>>([&](auto i) { CHECK(get(sl, i) == (*src[i[2]])(i[0], i[1])); });
  const auto one = evaluate(stack<0>(a));
  STATIC_REQUIRE(std::is_same_v<decltype(one), const Tensor<float, shape<1, 2, 3>>>);
  CHECK(one(0, 1, 2) == a(1, 2));
}

TEST_CASE("split returns consecutive slices, usable with structured bindings", "[views]") {
  const auto a = iota<float, shape<6, 4>>();
  auto [p, q, r] = split<0, 1, 3, 2>(a);
  STATIC_REQUIRE(has_shape_v<decltype(p), shape<1, 4>>);
  STATIC_REQUIRE(has_shape_v<decltype(q), shape<3, 4>>);
  STATIC_REQUIRE(has_shape_v<decltype(r), shape<2, 4>>);
  STATIC_REQUIRE(detail::is_leaf_v<decltype(q)>);
  const auto tp = evaluate(p);
  const auto tq = evaluate(q);
  const auto tr = evaluate(r);
  for_each_index<shape<1, 4>>([&](auto i) { CHECK(get(tp, i) == a(i[0], i[1])); });
  for_each_index<shape<3, 4>>([&](auto i) { CHECK(get(tq, i) == a(i[0] + 1, i[1])); });
  for_each_index<shape<2, 4>>([&](auto i) { CHECK(get(tr, i) == a(i[0] + 4, i[1])); });

  auto [left, mid, right] = split<-1, 1, 0, 3>(a);
  STATIC_REQUIRE(has_shape_v<decltype(mid), shape<6, 0>>);
  const auto tl = evaluate(left);
  const auto tright = evaluate(right);
  for_each_index<shape<6, 1>>([&](auto i) { CHECK(get(tl, i) == a(i[0], 0)); });
  for_each_index<shape<6, 3>>([&](auto i) { CHECK(get(tright, i) == a(i[0], i[1] + 1)); });
  (void)mid;
  // split then concat is the identity.
  const auto round = evaluate(concat<-1>(left, right));
  for_each_index<shape<6, 4>>([&](auto i) { CHECK(get(round, i) == get(a, i)); });
}

// ---- tile and repeat --------------------------------------------------------------------------------
TEST_CASE("tile follows NumPy, including reps longer and shorter than the rank", "[views]") {
  const auto a = iota<float, shape<2, 3>>();
  const auto t = evaluate(tile<2, 3>(a));
  STATIC_REQUIRE(std::is_same_v<decltype(t), const Tensor<float, shape<4, 9>>>);
  for_each_index<shape<4, 9>>([&](auto i) { CHECK(get(t, i) == a(i[0] % 2, i[1] % 3)); });
  const auto up = evaluate(tile<2, 1, 2>(a)); // reps longer: a is treated as [1,2,3]
  STATIC_REQUIRE(std::is_same_v<decltype(up), const Tensor<float, shape<2, 2, 6>>>);
  for_each_index<shape<2, 2, 6>>([&](auto i) { CHECK(get(up, i) == a(i[1], i[2] % 3)); });
  const auto shorter = evaluate(tile<2>(a)); // reps shorter: reps is treated as [1,2]
  STATIC_REQUIRE(std::is_same_v<decltype(shorter), const Tensor<float, shape<2, 6>>>);
  for_each_index<shape<2, 6>>([&](auto i) { CHECK(get(shorter, i) == a(i[0], i[1] % 3)); });
  STATIC_REQUIRE(has_shape_v<decltype(tile<0, 1>(a)), shape<0, 3>>);
  STATIC_REQUIRE(detail::is_leaf_v<decltype(tile<1, 1>(a))>);
  // Tiling only extent-1 or new axes is a broadcast: it stays a strided leaf.
  const auto col = iota<float, shape<3, 1>>();
  STATIC_REQUIRE(detail::is_leaf_v<decltype(tile<2, 1, 4>(col))>);
  const auto bc = evaluate(tile<2, 1, 4>(col));
  for_each_index<shape<2, 3, 4>>([&](auto i) { CHECK(get(bc, i) == col(i[1], 0)); });
  STATIC_REQUIRE(!detail::is_leaf_v<decltype(tile<2, 1>(a))>);
}

TEST_CASE("repeat repeats each element along one axis", "[views]") {
  const auto a = iota<float, shape<2, 3>>();
  const auto r1 = evaluate(repeat<3, 1>(a));
  STATIC_REQUIRE(std::is_same_v<decltype(r1), const Tensor<float, shape<2, 9>>>);
  for_each_index<shape<2, 9>>([&](auto i) { CHECK(get(r1, i) == a(i[0], i[1] / 3)); });
  const auto r0 = evaluate(repeat<2, -2>(a));
  STATIC_REQUIRE(std::is_same_v<decltype(r0), const Tensor<float, shape<4, 3>>>);
  for_each_index<shape<4, 3>>([&](auto i) { CHECK(get(r0, i) == a(i[0] / 2, i[1])); });
  STATIC_REQUIRE(has_shape_v<decltype(repeat<0, 1>(a)), shape<2, 0>>);
  STATIC_REQUIRE(detail::is_leaf_v<decltype(repeat<1, 0>(a))>);
  // Repeating an extent-1 axis is a broadcast.
  const auto row = iota<int, shape<1, 4>>();
  STATIC_REQUIRE(detail::is_leaf_v<decltype(repeat<3, 0>(row))>);
  const auto rr = evaluate(repeat<3, 0>(row));
  for_each_index<shape<3, 4>>([&](auto i) { CHECK(get(rr, i) == row(0, i[1])); });
}

// ---- composition ------------------------------------------------------------------------------------
TEST_CASE("views compose with each other, with elementwise ops and with reductions", "[views]") {
  const auto a = iota<float, shape<3, 4>>();
  const auto b = iota<float, shape<4>>(10);

  // Sum over a slice of a transpose: transpose is [4,3]; rows 1..2; reduce the columns.
  const auto s = evaluate(sum(slice<range<1, 3>>(transpose(a)), axis<1>));
  STATIC_REQUIRE(std::is_same_v<decltype(s), const Tensor<float, shape<2>>>);
  for (index_t r = 0; r < 2; ++r) CHECK(s(r) == a(0, r + 1) + a(1, r + 1) + a(2, r + 1));
  const auto total = evaluate(sum(flip<0>(slice<whole, range<none, none, -2>>(a))));
  CHECK(total() == Approx(3.0 + 1 + 7 + 5 + 11 + 9));

  // A view of an elementwise tree is pushed to its leaves.
  auto e = transpose(a * 2.0f + b);
  STATIC_REQUIRE(detail::is_map_node_v<decltype(e)>);
  const auto te = evaluate(e);
  for_each_index<shape<4, 3>>([&](auto i) { CHECK(get(te, i) == a(i[1], i[0]) * 2 + b(i[0])); });
  auto tiled = tile<2, 1>(exp(a) - 1.0f);
  STATIC_REQUIRE(detail::is_map_node_v<decltype(tiled)>);
  const auto tt = evaluate(tiled);
  for_each_index<shape<6, 4>>([&](auto i) { CHECK(get(tt, i) == Approx(std::exp(a(i[0] % 3, i[1])) - 1)); });
  const auto rep = evaluate(repeat<2, 1>(a) + tile<2>(b));
  for_each_index<shape<3, 8>>([&](auto i) { CHECK(get(rep, i) == a(i[0], i[1] / 2) + b(i[1] % 4)); });

  // Views of opaque nodes (reductions, pads, concats) and opaque nodes of views.
  const auto rt = evaluate(transpose(sum(reshape<3, 2, 2>(a), axis<2>)));
  for_each_index<shape<2, 3>>([&](auto i) { CHECK(get(rt, i) == a(i[1], 2 * i[0]) + a(i[1], 2 * i[0] + 1)); });
  const auto ps = evaluate(slice<range<1, none, 2>, range<none, none, -1>>(pad<1, 1, 1, 1>(a, 9.0f)));
  STATIC_REQUIRE(std::is_same_v<decltype(ps), const Tensor<float, shape<2, 6>>>);
  for_each_index<shape<2, 6>>([&](auto i) {
    const index_t r = 1 + 2 * i[0] - 1, c = 5 - i[1] - 1; // padded (1 + 2i, 5 - j), minus the border
    CHECK(get(ps, i) == (r < 3 && c >= 0 && c < 4 ? a(r, c) : 9.0f));
  });
  const auto cr = evaluate(concat<0>(sum(a, axis<1>, keepdims), max(a, axis<1>, keepdims) * 10.0f));
  STATIC_REQUIRE(std::is_same_v<decltype(cr), const Tensor<float, shape<6, 1>>>);
  for (index_t r = 0; r < 3; ++r) {
    CHECK(cr(r, 0) == a(r, 0) + a(r, 1) + a(r, 2) + a(r, 3));
    CHECK(cr(r + 3, 0) == a(r, 3) * 10);
  }
  const auto cs = evaluate(sum(concat<1>(a, flip<1>(a)), axis<0>));
  STATIC_REQUIRE(std::is_same_v<decltype(cs), const Tensor<float, shape<8>>>);
  for (index_t k = 0; k < 8; ++k) {
    const index_t col = k < 4 ? k : 7 - k;
    CHECK(cs(k) == a(0, col) + a(1, col) + a(2, col));
  }
}

TEST_CASE("views over a pad or concat broadcast in elementwise ops", "[views]") {
  const auto a = iota<float, shape<3>>();
  const auto c = iota<float, shape<2, 1>>(10);
  // pad gives [5]; the concat [2,1] broadcasts against it.
  const auto t = evaluate(pad<1, 1>(a) * concat<0>(slice<range<0, 1>>(c), slice<range<1, 2>>(c)));
  STATIC_REQUIRE(std::is_same_v<decltype(t), const Tensor<float, shape<2, 5>>>);
  for_each_index<shape<2, 5>>([&](auto i) {
    const float pa = i[1] >= 1 && i[1] <= 3 ? a(i[1] - 1) : 0.0f;
    CHECK(get(t, i) == pa * c(i[0], 0));
  });
}

TEST_CASE("large views run on the threaded, vectorised paths", "[views]") {
  const auto a = iota<float, shape<256, 255>>();
  const auto t = evaluate(tile<2, 3>(a) + 1.0f);
  index_t bad = 0;
  for_each_index<shape<512, 765>>([&](auto i) { bad += get(t, i) != a(i[0] % 256, i[1] % 255) + 1.0f; });
  CHECK(bad == 0);
  const auto r = evaluate(repeat<3, 0>(a));
  for_each_index<shape<768, 255>>([&](auto i) { bad += get(r, i) != a(i[0] / 3, i[1]); });
  CHECK(bad == 0);
  const auto b = iota<float, shape<255, 256>>(0.5f);
  const auto c = evaluate(concat<1>(a, transpose(b), a));
  for_each_index<shape<256, 765>>([&](auto i) {
    const index_t k = i[1];
    bad += get(c, i) != (k < 255 ? a(i[0], k) : k < 510 ? b(k - 255, i[0]) : a(i[0], k - 510));
  });
  CHECK(bad == 0);
  const auto p = evaluate(pad<3, 1, 0, 2>(a, -1.0f));
  for_each_index<shape<260, 257>>([&](auto i) {
    const index_t rr = i[0] - 3;
    bad += get(p, i) != (rr >= 0 && rr < 256 && i[1] < 255 ? a(rr, i[1]) : -1.0f);
  });
  CHECK(bad == 0);
  const auto colsum = evaluate(sum(repeat<2, 1>(a), axis<0>));
  for (index_t k = 0; k < 510; ++k) {
    double want = 0;
    for (index_t row = 0; row < 256; ++row) want += a(row, k / 2);
    bad += colsum(k) != Approx(want);
  }
  CHECK(bad == 0);
}

// ---- lifetime and aliasing --------------------------------------------------------------------------
TEST_CASE("views of temporaries are safe to keep in auto and evaluate later", "[views]") {
  auto make = [] { return iota<float, shape<2, 3>>(); };
  auto t = transpose(make());
  auto p = pad<1, 0, 0, 1>(make() * 2.0f, 7.0f);
  auto c = concat<0>(make(), make() + 6.0f);
  auto r = tile<2, 1>(make());
  auto rp = repeat<2, 1>(make());
  auto s = stack<0>(make(), make());
  auto [lo, hi] = split<1, 1, 2>(make());
  auto rs = reshape<3, -1>(transpose(make())); // an index map over an owned, non-contiguous leaf
  const auto a = make();
  const auto tt = evaluate(t);
  for_each_index<shape<3, 2>>([&](auto i) { CHECK(get(tt, i) == a(i[1], i[0])); });
  const auto tp = evaluate(p);
  CHECK(tp(0, 0) == 7);
  CHECK(tp(2, 2) == a(1, 2) * 2);
  CHECK(tp(2, 3) == 7);
  const auto tc = evaluate(c);
  for_each_index<shape<4, 3>>([&](auto i) { CHECK(get(tc, i) == float(i[0] * 3 + i[1])); });
  const auto tr = evaluate(r);
  CHECK(tr(3, 2) == a(1, 2));
  const auto trp = evaluate(rp);
  CHECK(trp(1, 5) == a(1, 2));
  const auto ts = evaluate(s);
  CHECK(ts(1, 1, 1) == a(1, 1));
  const auto tlo = evaluate(lo);
  const auto thi = evaluate(hi);
  CHECK(tlo(1, 0) == a(1, 0));
  CHECK(thi(1, 1) == a(1, 2));
  const auto trs = evaluate(rs);
  for_each_index<shape<3, 2>>([&](auto i) {
    const index_t l = i[0] * 2 + i[1];
    CHECK(get(trs, i) == a(l % 2, l / 2));
  });
}

TEST_CASE("a view of a tensor does not copy it", "[views]") {
  Tensor<float, shape<3, 4>> a = iota<float, shape<3, 4>>();
  Tensor<float, shape<2, 4>> b = iota<float, shape<2, 4>>(100);
  auto v = sum(slice<range<1, 3>>(transpose(a)), axis<1>);
  auto rs = reshape<2, 6>(transpose(a));
  auto p = pad<1, 1, 1, 1>(a);
  auto c = concat<0>(a, b);
  auto t = tile<2, 2>(a);
  auto r = repeat<2, 0>(a);
  auto [top, bottom] = split<0, 2, 1>(a);
  auto st = stack<0>(b, b);
  a(2, 1) = 1000; // seen by every view built before
  b(1, 3) = -1;
  CHECK(evaluate(v)(0) == a(0, 1) + a(1, 1) + 1000);
  CHECK(evaluate(rs)(0, 5) == 1000); // transposed (1,2) is linear position 5
  CHECK(evaluate(p)(3, 2) == 1000);
  CHECK(evaluate(c)(2, 1) == 1000);
  CHECK(evaluate(c)(4, 3) == -1);
  CHECK(evaluate(t)(5, 5) == 1000);
  CHECK(evaluate(r)(5, 1) == 1000);
  CHECK(evaluate(bottom)(0, 1) == 1000);
  CHECK(evaluate(top)(1, 1) == a(1, 1));
  CHECK(evaluate(st)(1, 1, 3) == -1);
  // The leaves point into the tensor's own storage.
  CHECK(reshape<-1>(a).data() == a.data());
  CHECK(slice<range<1, 2>>(a).data() == a.data());
  CHECK(std::get<1>(split<0, 2, 1>(a)).data() == a.data());
}

TEST_CASE("writing through a view, and assigning a view of a tensor to itself", "[views]") {
  Tensor<float, shape<3, 4>> a;
  eval(slice<whole, range<none, none, 2>>(a), iota<float, shape<3, 2>>(1));
  for_each_index<shape<3, 4>>([&](auto i) { CHECK(get(a, i) == (i[1] % 2 ? 0.0f : float(i[0] * 2 + i[1] / 2 + 1))); });
  eval(transpose(a), broadcast_to<shape<4, 3>>(iota<float, shape<4, 1>>(5)));
  for_each_index<shape<3, 4>>([&](auto i) { CHECK(get(a, i) == float(5 + i[1])); });

  // The destination read through an opaque node (pad, concat) is evaluated aside, never half-overwritten.
  Tensor<float, shape<4>> x{1, 2, 3, 4};
  x = pad<1, 1>(slice<range<1, 3>>(x), 0.0f);
  CHECK(std::vector<float>(x.begin(), x.end()) == std::vector<float>{0, 2, 3, 0});
  Tensor<float, shape<4>> y{1, 2, 3, 4};
  y = concat<0>(slice<range<2, 4>>(y), slice<range<0, 2>>(y));
  CHECK(std::vector<float>(y.begin(), y.end()) == std::vector<float>{3, 4, 1, 2});
  Tensor<float, shape<4>> z{1, 2, 3, 4};
  z = repeat<2, 0>(slice<range<0, 2>>(z));
  CHECK(std::vector<float>(z.begin(), z.end()) == std::vector<float>{1, 1, 2, 2});
}
