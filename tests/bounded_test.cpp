// Bounded run-time extents (shape<upto<N>, ...>, issue 16 item 1): a tensor one of whose axes (the
// first, a middle one: [H, upto<T>, D], or the last) holds up to N positions and a run-time length of them. Each op
// family that takes them so far (elementwise with broadcasting, row-fused composites, reductions,
// lookups, rope, matmul of bounded rows, attention, views that carry the bound) is compared, at lengths
// 1, an odd length and the capacity, with the same expression over static shapes (or, where the bounded
// axis is reduced, with plain loops over the active rows); elements past the length are never written;
// lengths that disagree or exceed the capacity are errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include <tenfold/tenfold.hpp>

using namespace tenfold;

namespace {
template <class T, class S>
void fill(Tensor<T, S>& t, std::uint64_t seed) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (auto& x : t) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = T(-2.0 + 4.0 * double(s >> 11) * 0x1p-53);
  }
}

// Static [C, W...] elements copied into a bounded tensor of the same capacity, holding `length` rows.
template <class T, class B, class S>
void load(Tensor<T, B>& b, const Tensor<T, S>& s, index_t length) {
  static_assert(B::size == S::size);
  std::copy(s.begin(), s.end(), b.begin());
  b.set_length(length);
}

constexpr float sentinel = 12345.f;

// The first `length` rows of `got` (bounded) against `want` (static, same capacity), and every element past
// them still the sentinel.
template <class T, class B, class S>
void check_rows(const Tensor<T, B>& got, const Tensor<T, S>& want, index_t length, double tol) {
  REQUIRE(got.length() == length);
  const index_t row = B::size / B::dims[0];
  double worst = 0;
  for (index_t i = 0; i < length * row; ++i) worst = std::max(worst, double(std::fabs(got.data()[i] - want.data()[i])));
  CHECK(worst <= tol);
  index_t touched = 0;
  for (index_t i = length * row; i < B::size; ++i) touched += got.data()[i] != T(sentinel);
  CHECK(touched == 0);
}

template <class T, class B>
void poison(Tensor<T, B>& t) {
  for (auto& x : t) x = T(sentinel);
}
} // namespace

TEST_CASE("upto<N>: the shape holds capacities, the mask and the length") {
  using S = shape<upto<64>, 96>;
  STATIC_REQUIRE(S::dims == std::array<index_t, 2>{64, 96});
  STATIC_REQUIRE(S::bounded == std::array<bool, 2>{true, false});
  STATIC_REQUIRE(S::size == 64 * 96);
  STATIC_REQUIRE(S::has_bounded);
  STATIC_REQUIRE(!shape<64, 96>::has_bounded);
  STATIC_REQUIRE(!std::is_same_v<S, shape<64, 96>>);
  // broadcasting keeps the bound; a reduction over the other axes keeps it too
  STATIC_REQUIRE(std::is_same_v<broadcast_shape_t<S, shape<96>>, S>);
  STATIC_REQUIRE(std::is_same_v<broadcast_shape_t<shape<1, 96>, S>, S>);
  Tensor<float, S> x;
  CHECK(x.length() == 64); // a new tensor holds its capacity
  x.set_length(5);
  CHECK(x.length() == 5);
  CHECK_THROWS_AS(x.set_length(65), error);
  CHECK_THROWS_AS(x.set_length(-1), error);
  CHECK(x.length() == 5); // a refused length changes nothing
  x(4, 95) = 1.f;
  CHECK_THROWS_AS(x(5, 0), error); // element access stops at the length
  CHECK(Tensor<float, S>::shape_string() == "[upto 64,96]");
  // printed: the rows up to the length
  Tensor<float, shape<upto<4>, 2>> p{1, 2, 3, 4, 5, 6, 7, 8};
  p.set_length(2);
  CHECK(to_string(p) == "[[1. 2.]\n [3. 4.]]");
}

TEST_CASE("upto<N>: elementwise ops with broadcast operands run to the length") {
  Tensor<float, shape<64, 96>> xs, ys;
  Tensor<float, shape<96>> b;
  fill(xs, 1);
  fill(ys, 2);
  fill(b, 3);
  for (index_t n : {index_t(1), index_t(9), index_t(64)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<64>, 96>> x, y, out;
    load(x, xs, n);
    load(y, ys, n);
    poison(out);
    out = exp(x) * 2.f + y * b - 1.f;
    const Tensor<float, shape<64, 96>> want = exp(xs) * 2.f + ys * b - 1.f;
    check_rows(out, want, n, 0);
  }
}

TEST_CASE("upto<N>: row-fused softmax, layer_norm and rms_norm run to the length") {
  Tensor<float, shape<64, 200>> xs;
  Tensor<float, shape<200>> g, b;
  fill(xs, 4);
  fill(g, 5);
  fill(b, 6);
  for (index_t n : {index_t(1), index_t(9), index_t(64)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<64>, 200>> x, out;
    load(x, xs, n);
    poison(out);
    out = softmax(x);
    check_rows(out, Tensor<float, shape<64, 200>>(softmax(xs)), n, 1e-7);
    poison(out); // softmax's online form (ops/softmax_config.hpp), whatever this machine's table chooses
    out = detail::softmax_online<detail::mask_holder<detail::canon(std::array<bool, 2>{false, true})>>(
        detail::as_node(x));
    check_rows(out, Tensor<float, shape<64, 200>>(softmax(xs)), n, 1e-6);
    poison(out);
    out = layer_norm(x, g, b);
    check_rows(out, Tensor<float, shape<64, 200>>(layer_norm(xs, g, b)), n, 1e-6);
    poison(out);
    out = rms_norm(x, g) + x;
    check_rows(out, Tensor<float, shape<64, 200>>(rms_norm(xs, g) + xs), n, 1e-6);
  }
}

TEST_CASE("upto<N>: reductions over the other axes run to the length") {
  Tensor<float, shape<64, 200>> xs;
  Tensor<float, shape<16, 8, 12>> zs;
  fill(xs, 7);
  fill(zs, 8);
  for (index_t n : {index_t(1), index_t(9), index_t(16)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<64>, 200>> x;
    load(x, xs, n);
    Tensor<float, shape<upto<64>>> s;
    poison(s);
    s = sum(x, axis<-1>);
    check_rows(s, Tensor<float, shape<64>>(sum(xs, axis<-1>)), n, 0);
    Tensor<float, shape<upto<64>, 1>> m;
    poison(m);
    m = max(x, axis<1>, keepdims);
    check_rows(m, Tensor<float, shape<64, 1>>(max(xs, axis<1>, keepdims)), n, 0);
    // rows narrower than a vector (read as windows when static)
    Tensor<float, shape<64, 4>> ns;
    fill(ns, 10);
    Tensor<float, shape<upto<64>, 4>> nx;
    load(nx, ns, n);
    Tensor<float, shape<upto<64>>> nsum;
    poison(nsum);
    nsum = sum(nx, axis<1>);
    check_rows(nsum, Tensor<float, shape<64>>(sum(ns, axis<1>)), n, 1e-6);
    Tensor<float, shape<upto<64>, 4>> nsm;
    poison(nsm);
    nsm = softmax(nx);
    check_rows(nsm, Tensor<float, shape<64, 4>>(softmax(ns)), n, 1e-7);
    // a middle axis: the innermost is kept (the column-accumulating kernel)
    Tensor<float, shape<upto<16>, 8, 12>> z;
    load(z, zs, n);
    Tensor<float, shape<upto<16>, 12>> zm;
    poison(zm);
    zm = mean(z, axis<1>);
    check_rows(zm, Tensor<float, shape<16, 12>>(mean(zs, axis<1>)), n, 0);
  }
}

TEST_CASE("upto<N>: a large bounded tensor splits its active rows across the threads") {
  // 512 x 256 elements: past the parallel grain, so the rows go through parallel_for
  Tensor<float, shape<512, 256>> xs;
  fill(xs, 9);
  for (index_t n : {index_t(3), index_t(301), index_t(512)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<512>, 256>> x, out;
    load(x, xs, n);
    poison(out);
    out = tanh(x) * x;
    check_rows(out, Tensor<float, shape<512, 256>>(tanh(xs) * xs), n, 0);
    poison(out);
    out = softmax(x);
    check_rows(out, Tensor<float, shape<512, 256>>(softmax(xs)), n, 1e-7);
  }
}

TEST_CASE("upto<N>: reductions over the bounded axis count its length") {
  Tensor<float, shape<64, 40>> xs;
  Tensor<float, shape<16, 8, 12>> zs;
  fill(xs, 18);
  fill(zs, 19);
  // plain loops in double over the first n rows (the reference)
  auto column_mean = [&](index_t n, index_t j) {
    double s = 0;
    for (index_t i = 0; i < n; ++i) s += xs(i, j);
    return s / double(n);
  };
  for (index_t n : {index_t(1), index_t(9), index_t(64)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<64>, 40>> x;
    load(x, xs, n);
    // over the bounded axis: the column-accumulating kernel, mean divided by the length
    const Tensor<float, shape<40>> m = mean(x, axis<0>);
    double worst = 0;
    for (index_t j = 0; j < 40; ++j) worst = std::max(worst, std::fabs(m(j) - column_mean(n, j)));
    CHECK(worst <= 1e-6);
    const Tensor<float, shape<40>> mx = max(x, axis<0>);
    index_t wrong = 0;
    for (index_t j = 0; j < 40; ++j) {
      float want = xs(0, j);
      for (index_t i = 1; i < n; ++i) want = std::max(want, xs(i, j));
      wrong += mx(j) != want;
    }
    CHECK(wrong == 0);
    // over every axis: one run of the active elements
    const Tensor<float, shape<>> total = sum(x);
    double want = 0;
    for (index_t i = 0; i < n * 40; ++i) want += xs.data()[i];
    CHECK(std::fabs(total() - want) <= 1e-4);
    // inside an expression: the reduction goes to a buffer first, then is broadcast back
    Tensor<float, shape<upto<64>, 40>> centred;
    poison(centred);
    centred = x - mean(x, axis<0>, keepdims);
    REQUIRE(centred.length() == n);
    worst = 0;
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < 40; ++j) worst = std::max(worst, std::fabs(centred(i, j) - (xs(i, j) - column_mean(n, j))));
    CHECK(worst <= 1e-5);
    index_t touched = 0;
    for (index_t i = n * 40; i < 64 * 40; ++i) touched += centred.data()[i] != sentinel;
    CHECK(touched == 0);
  }
  for (index_t n : {index_t(1), index_t(5), index_t(16)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<16>, 8, 12>> z;
    load(z, zs, n);
    // axes 0 and 1, the innermost kept; axes 0 and 2, the innermost reduced with axis 0 in the odometer
    const Tensor<float, shape<12>> a = sum(z, axes<0, 1>);
    const Tensor<float, shape<8>> b = mean(z, axes<0, 2>);
    double worst = 0;
    for (index_t k = 0; k < 12; ++k) {
      double s = 0;
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < 8; ++j) s += zs(i, j, k);
      worst = std::max(worst, std::fabs(a(k) - s));
    }
    for (index_t j = 0; j < 8; ++j) {
      double s = 0;
      for (index_t i = 0; i < n; ++i)
        for (index_t k = 0; k < 12; ++k) s += zs(i, j, k);
      worst = std::max(worst, std::fabs(b(j) - s / double(n * 12)));
    }
    CHECK(worst <= 1e-5);
  }
  // an empty length: a sum is its identity, a max has none
  Tensor<float, shape<upto<64>, 40>> x;
  x.set_length(0);
  const Tensor<float, shape<40>> s = sum(x, axis<0>);
  CHECK(std::all_of(s.begin(), s.end(), [](float v) { return v == 0.f; }));
  Tensor<float, shape<40>> mx;
  CHECK_THROWS_WITH(mx = max(x, axis<0>), Catch::Contains("axis of length 0"));
}

TEST_CASE("upto<N>: a matmul of bounded rows by a static matrix runs over the active rows") {
  Tensor<float, shape<64, 40>> xs;
  Tensor<float, shape<40, 48>> w;
  Tensor<float, shape<48>> b;
  Tensor<float, shape<40>> g, beta;
  Tensor<float, shape<40, 40>> sq;
  fill(sq, 20);
  fill(xs, 11);
  fill(w, 12);
  fill(b, 13);
  fill(g, 14);
  fill(beta, 15);
  for (index_t n : {index_t(1), index_t(9), index_t(64)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<64>, 40>> x;
    load(x, xs, n);
    Tensor<float, shape<upto<64>, 48>> y;
    // the GEMM with its epilogue (bias and activation applied as blocks are stored)
    poison(y);
    y = gelu(matmul(x, w) + b);
    check_rows(y, Tensor<float, shape<64, 48>>(gelu(matmul(xs, w) + b)), n, 1e-5);
    // a computed operand: layer_norm's rows go to an intermediate buffer of the bounded shape first
    poison(y);
    y = matmul(layer_norm(x, g, beta), w);
    check_rows(y, Tensor<float, shape<64, 48>>(matmul(layer_norm(xs, g, beta), w)), n, 1e-5);
    // a GEMM's result read twice by layer_norm (a let: computed once, read back at the same length)
    poison(y);
    y = matmul(layer_norm(matmul(x, sq), g, beta), w);
    check_rows(y, Tensor<float, shape<64, 48>>(matmul(layer_norm(matmul(xs, sq), g, beta), w)), n, 1e-4);
  }
  // a product large enough for the blocked kernel and both threads
  Tensor<float, shape<256, 192>> as;
  Tensor<float, shape<192, 320>> bs;
  fill(as, 16);
  fill(bs, 17);
  for (index_t n : {index_t(5), index_t(131), index_t(256)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<256>, 192>> a;
    load(a, as, n);
    Tensor<float, shape<upto<256>, 320>> c;
    poison(c);
    c = matmul(a, bs);
    check_rows(c, Tensor<float, shape<256, 320>>(matmul(as, bs)), n, 1e-4);
  }
}

TEST_CASE("upto<N>: one head's attention over bounded queries and keys") {
  constexpr index_t D = 16, Dv = 24;
  Tensor<float, shape<64, D>> qs, ks;
  Tensor<float, shape<64, Dv>> vs;
  fill(qs, 21);
  fill(ks, 22);
  fill(vs, 23);
  // plain loops in double: softmax(q kᵀ / √D) v over the first n keys (j <= i when causal)
  auto reference = [&](index_t n, index_t i, index_t e, bool causal) {
    const index_t seen = causal ? i + 1 : n;
    double m = -1e300, l = 0, o = 0;
    std::vector<double> s(static_cast<std::size_t>(seen));
    for (index_t j = 0; j < seen; ++j) {
      double d = 0;
      for (index_t c = 0; c < D; ++c) d += double(qs(i, c)) * double(ks(j, c));
      s[std::size_t(j)] = d / std::sqrt(double(D));
      m = std::max(m, s[std::size_t(j)]);
    }
    for (index_t j = 0; j < seen; ++j) {
      const double p = std::exp(s[std::size_t(j)] - m);
      l += p, o += p * double(vs(j, e));
    }
    return o / l;
  };
  for (index_t n : {index_t(1), index_t(9), index_t(64)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<64>, D>> q, k;
    Tensor<float, shape<upto<64>, Dv>> v, out, causal_out;
    load(q, qs, n);
    load(k, ks, n);
    load(v, vs, n);
    poison(out);
    poison(causal_out);
    out = attention(q, k, v);
    causal_out = attention(q, k, v, causal);
    REQUIRE(out.length() == n);
    double worst = 0;
    for (index_t i = 0; i < n; ++i)
      for (index_t e = 0; e < Dv; ++e) {
        worst = std::max(worst, std::fabs(out(i, e) - reference(n, i, e, false)));
        worst = std::max(worst, std::fabs(causal_out(i, e) - reference(n, i, e, true)));
      }
    CHECK(worst <= 1e-5);
    index_t touched = 0;
    for (index_t i = n * Dv; i < 64 * Dv; ++i) touched += (out.data()[i] != sentinel) + (causal_out.data()[i] != sentinel);
    CHECK(touched == 0);
  }
}

TEST_CASE("upto<N>: views that keep the bounded axis, and a multi-head attention through them") {
  // [upto 64, H * D] seen as [upto 64, H, D] (a reshape of the other axes) and as column slices
  constexpr index_t H = 3, D = 8;
  Tensor<float, shape<64, H * D>> qs, ks, vs;
  fill(qs, 24);
  fill(ks, 25);
  fill(vs, 26);
  for (index_t n : {index_t(1), index_t(9), index_t(64)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<64>, H * D>> q, k, v;
    load(q, qs, n);
    load(k, ks, n);
    load(v, vs, n);
    // a reshape keeps the bound: per-head sums of squares
    Tensor<float, shape<upto<64>, H>> norms;
    poison(norms);
    norms = sum(square(reshape<64, H, D>(q)), axis<-1>);
    check_rows(norms, Tensor<float, shape<64, H>>(sum(square(reshape<64, H, D>(qs)), axis<-1>)), n, 1e-6);
    poison(norms);
    norms = sum(square(reshape<upto<64>, H, D>(q)), axis<-1>); // (the same, spelled with the bound)
    const Tensor<float, shape<64, H>> want_norms = sum(square(reshape<64, H, D>(qs)), axis<-1>);
    check_rows(norms, want_norms, n, 1e-6);
    // each head's causal attention on its column slice, written into the output's column slice
    Tensor<float, shape<upto<64>, H * D>> out;
    poison(out);
    [&]<index_t... h>(std::integer_sequence<index_t, h...>) {
      (eval(slice<whole, range<h * D, (h + 1) * D>>(out),
            attention(slice<whole, range<h * D, (h + 1) * D>>(q), slice<whole, range<h * D, (h + 1) * D>>(k),
                      slice<whole, range<h * D, (h + 1) * D>>(v), causal)),
       ...);
    }(std::make_integer_sequence<index_t, H>{});
    // the reference: the same heads over the first n rows of static tensors, one length at a time
    REQUIRE(out.length() == n);
    double worst = 0;
    for (index_t h = 0; h < H; ++h)
      for (index_t i = 0; i < n; ++i)
        for (index_t e = 0; e < D; ++e) {
          double m = -1e300, l = 0, o = 0;
          std::vector<double> s(static_cast<std::size_t>(i + 1));
          for (index_t j = 0; j <= i; ++j) {
            double d = 0;
            for (index_t c = 0; c < D; ++c) d += double(qs(i, h * D + c)) * double(ks(j, h * D + c));
            s[std::size_t(j)] = d / std::sqrt(double(D));
            m = std::max(m, s[std::size_t(j)]);
          }
          for (index_t j = 0; j <= i; ++j) {
            const double p = std::exp(s[std::size_t(j)] - m);
            l += p, o += p * double(vs(j, h * D + e));
          }
          worst = std::max(worst, std::fabs(out(i, h * D + e) - o / l));
        }
    CHECK(worst <= 1e-5);
    index_t touched = 0;
    for (index_t i = n * H * D; i < 64 * H * D; ++i) touched += out.data()[i] != sentinel;
    CHECK(touched == 0);
  }
}

TEST_CASE("upto<N>: an embedding at bounded token ids, fused with a layer_norm, checks only the active ids") {
  constexpr index_t V = 50, W = 24;
  Tensor<float, shape<V, W>> table;
  Tensor<float, shape<W>> g, b;
  fill(table, 31);
  fill(g, 32);
  fill(b, 34);
  Tensor<std::int32_t, shape<64>> all_ids;
  for (index_t i = 0; i < 64; ++i) all_ids(i) = std::int32_t((i * 7 + 3) % V);
  for (index_t n : {index_t(1), index_t(17), index_t(64)}) {
    INFO("length " << n);
    Tensor<std::int32_t, shape<upto<64>>> ids;
    STATIC_REQUIRE(std::is_same_v<decltype(embedding(table, ids))::shape_type, shape<upto<64>, W>>);
    load(ids, all_ids, n);
    // the inactive ids are out of the vocabulary: never checked, never read
    for (index_t i = n; i < 64; ++i) ids.data()[i] = std::int32_t(V + 1000);
    Tensor<float, shape<upto<64>, W>> x;
    poison(x);
    x = layer_norm(embedding(table, ids), g, b);
    const Tensor<float, shape<64, W>> want = layer_norm(embedding(table, all_ids), g, b);
    check_rows(x, want, n, 1e-5);
    // an active id out of range is an error naming it
    ids.data()[n - 1] = std::int32_t(V);
    CHECK_THROWS_WITH(x = embedding(table, ids), Catch::Contains("index 50") && Catch::Contains("of extent 50"));
  }
}

TEST_CASE("upto<N>: rope over bounded positions with tables of the same length") {
  constexpr index_t D = 16, H = 3;
  rope_tables<float, 64, D> full_tables;
  rope_tables<float, upto<64>, D> tables;
  CHECK(tables.cos.length() == 64);
  Tensor<float, shape<64, H * D>> xs;
  fill(xs, 33);
  for (index_t n : {index_t(1), index_t(9), index_t(64)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<64>, H * D>> x;
    load(x, xs, n);
    tables.first(n);
    // each head's column slice rotated, written into the output's column slice
    Tensor<float, shape<upto<64>, H * D>> out;
    poison(out);
    [&]<index_t... h>(std::integer_sequence<index_t, h...>) {
      (eval(slice<whole, range<h * D, (h + 1) * D>>(out), rope(slice<whole, range<h * D, (h + 1) * D>>(x), tables.cos, tables.sin)), ...);
    }(std::make_integer_sequence<index_t, H>{});
    Tensor<float, shape<64, H * D>> want;
    [&]<index_t... h>(std::integer_sequence<index_t, h...>) {
      (eval(slice<whole, range<h * D, (h + 1) * D>>(want),
            rope(slice<whole, range<h * D, (h + 1) * D>>(xs), full_tables.cos, full_tables.sin)),
       ...);
    }(std::make_integer_sequence<index_t, H>{});
    check_rows(out, want, n, 1e-6);
  }
  CHECK_THROWS_AS(tables.first(65), error);
  // tables of another length than x's: an error before anything is written
  Tensor<float, shape<upto<64>, D>> x, out;
  x.set_length(5);
  tables.first(6);
  CHECK_THROWS_WITH(out = rope(x, tables.cos, tables.sin), Catch::Contains("different lengths (5 and 6)"));
}

TEST_CASE("upto<N>: operands of different lengths are an error and write nothing") {
  Tensor<float, shape<upto<8>, 4>> a, b, out;
  a.set_length(3);
  b.set_length(5);
  poison(out);
  out.set_length(2);
  CHECK_THROWS_WITH(out = a + b, Catch::Contains("different lengths (3 and 5)"));
  CHECK(out.length() == 2);
  index_t touched = 0;
  for (float v : out) touched += v != sentinel;
  CHECK(touched == 0);
  // the destination takes the operands' length
  b.set_length(3);
  out = a + b;
  CHECK(out.length() == 3);
}

namespace {
// [A, upto<T>, W] (bounded axis 1) against the static [A, T, W] over the active positions; the rest
// still the sentinel.
template <class T, class B, class S>
void check_middle(const Tensor<T, B>& got, const Tensor<T, S>& want, index_t length, double tol) {
  static_assert(B::rank == 3 && B::bounded_axis == 1 && B::size == S::size);
  REQUIRE(got.length() == length);
  double worst = 0;
  index_t touched = 0;
  for (index_t a = 0; a < B::dims[0]; ++a)
    for (index_t t = 0; t < B::dims[1]; ++t)
      for (index_t w = 0; w < B::dims[2]; ++w) {
        const index_t k = (a * B::dims[1] + t) * B::dims[2] + w;
        if (t < length) worst = std::max(worst, double(std::fabs(got.data()[k] - want.data()[k])));
        else touched += got.data()[k] != T(sentinel);
      }
  CHECK(worst <= tol);
  CHECK(touched == 0);
}
} // namespace

TEST_CASE("upto<N> on a middle axis: elementwise ops, rows, reductions and lookups run over its active positions") {
  constexpr index_t A = 3, T = 8, W = 20;
  Tensor<float, shape<A, T, W>> xs;
  Tensor<float, shape<W>> g, b;
  Tensor<float, shape<A, 1, W>> c;
  fill(xs, 41);
  fill(g, 42);
  fill(b, 43);
  fill(c, 44);
  STATIC_REQUIRE(shape<A, upto<T>, W>::bounded_axis == 1);
  for (index_t n : {index_t(1), index_t(5), index_t(8)}) {
    INFO("length " << n);
    Tensor<float, shape<A, upto<T>, W>> x, out;
    load(x, xs, n);
    poison(out);
    out = exp(x) * g + c;
    check_middle(out, Tensor<float, shape<A, T, W>>(exp(xs) * g + c), n, 1e-6);
    poison(out);
    out = softmax(x);
    check_middle(out, Tensor<float, shape<A, T, W>>(softmax(xs)), n, 1e-7);
    poison(out);
    out = layer_norm(x, g, b);
    check_middle(out, Tensor<float, shape<A, T, W>>(layer_norm(xs, g, b)), n, 1e-5);
    // a reduction over the last axis keeps the bound on axis 1; over axis 0, the bound moves to axis 0
    Tensor<float, shape<A, upto<T>, 1>> rows;
    poison(rows);
    rows = sum(square(x), axis<-1>, keepdims);
    check_middle(rows, Tensor<float, shape<A, T, 1>>(sum(square(xs), axis<-1>, keepdims)), n, 1e-5);
    Tensor<float, shape<upto<T>, W>> cols;
    poison(cols);
    cols = max(x, axis<0>);
    check_rows(cols, Tensor<float, shape<T, W>>(max(xs, axis<0>)), n, 0);
    // a lookup at [A, upto<T>, 1] ids (seen as [A, upto<T>, 4]): only the active ones are checked and read
    Tensor<std::int32_t, shape<A, upto<T>, 1>> ids;
    ids.set_length(n);
    Tensor<std::int32_t, shape<A, T, 1>> all_ids;
    for (index_t i = 0; i < A * T; ++i) all_ids.data()[i] = std::int32_t((i * 5 + 1) % W);
    for (index_t i = 0; i < A * T; ++i) ids.data()[i] = i % T < n ? all_ids.data()[i] : std::int32_t(1000);
    Tensor<float, shape<W, 4>> table;
    fill(table, 45);
    Tensor<float, shape<A, upto<T>, 4>> e;
    poison(e);
    e = reshape<A, upto<T>, 4>(embedding(table, ids));
    check_middle(e, Tensor<float, shape<A, T, 4>>(reshape<A, T, 4>(embedding(table, all_ids))), n, 0);
  }
  // element access and printing stop at the length of the middle axis
  Tensor<float, shape<2, upto<3>, 2>> p;
  for (index_t i = 0; i < 12; ++i) p.data()[i] = float(i);
  p.set_length(1);
  CHECK_THROWS_AS(p(0, 1, 0), error);
  CHECK(p(1, 0, 1) == 7.f);
  Tensor<float, shape<2, 1, 2>> q;
  q(0, 0, 0) = 0, q(0, 0, 1) = 1, q(1, 0, 0) = 6, q(1, 0, 1) = 7;
  CHECK(to_string(p) == to_string(q));
}

TEST_CASE("upto<N>: a permutation carries the bound, so that multi-head attention over [H, upto<T>, D] is one call") {
  constexpr index_t H = 3, D = 8, T = 64;
  Tensor<float, shape<T, H * D>> qs, ks, vs;
  fill(qs, 51);
  fill(ks, 52);
  fill(vs, 53);
  // the static causal attention's first n rows are the bounded one's (row i reads keys 0..i)
  const Tensor<float, shape<T, H * D>> want = reshape<T, H * D>(permute<1, 0, 2>(attention(
      permute<1, 0, 2>(reshape<T, H, D>(qs)), permute<1, 0, 2>(reshape<T, H, D>(ks)), permute<1, 0, 2>(reshape<T, H, D>(vs)), causal)));
  for (index_t n : {index_t(1), index_t(9), index_t(64)}) {
    INFO("length " << n);
    Tensor<float, shape<upto<T>, H * D>> q, k, v, out;
    load(q, qs, n);
    load(k, ks, n);
    load(v, vs, n);
    // [upto T, H * D] -> [H, upto T, D]: the bound moves with its axis
    Tensor<float, shape<H, upto<T>, D>> heads;
    STATIC_REQUIRE(std::is_same_v<decltype(permute<1, 0, 2>(reshape<upto<T>, H, D>(q)))::shape_type, shape<H, upto<T>, D>>);
    poison(heads);
    heads = permute<1, 0, 2>(reshape<upto<T>, H, D>(q));
    check_middle(heads, Tensor<float, shape<H, T, D>>(permute<1, 0, 2>(reshape<T, H, D>(qs))), n, 0);
    poison(out);
    out = reshape<upto<T>, H * D>(permute<1, 0, 2>(attention(permute<1, 0, 2>(reshape<upto<T>, H, D>(q)),
                                                             permute<1, 0, 2>(reshape<upto<T>, H, D>(k)),
                                                             permute<1, 0, 2>(reshape<upto<T>, H, D>(v)), causal)));
    check_rows(out, want, n, 1e-5);
  }
}

TEST_CASE("upto<N> on a middle axis: reductions over it count its length") {
  constexpr index_t A = 3, T = 8, W = 20;
  Tensor<float, shape<A, T, W>> xs;
  fill(xs, 61);
  for (index_t n : {index_t(0), index_t(1), index_t(5), index_t(8)}) {
    INFO("length " << n);
    Tensor<float, shape<A, upto<T>, W>> x;
    load(x, xs, n);
    // references over the active positions, in double
    double worst = 0;
    const auto near = [&](double got, double want) { worst = std::max(worst, std::fabs(got - want) / (1 + std::fabs(want))); };
    // over axis 1 only (the innermost kept: the reduced positions walked to the length)
    const Tensor<float, shape<A, W>> s1 = sum(x, axis<1>), m1 = mean(x, axis<1>);
    for (index_t a = 0; a < A; ++a)
      for (index_t w = 0; w < W; ++w) {
        double s = 0;
        for (index_t t = 0; t < n; ++t) s += xs(a, t, w);
        near(s1(a, w), s);
        if (n > 0) near(m1(a, w), s / double(n));
      }
    // over axes 1 and 2 (one flat run in a static shape: here the run starts after the bounded axis)
    const Tensor<float, shape<A>> s12 = sum(x, axes<1, 2>), m12 = mean(square(x), axes<1, 2>);
    for (index_t a = 0; a < A; ++a) {
      double s = 0, q = 0;
      for (index_t t = 0; t < n; ++t)
        for (index_t w = 0; w < W; ++w) s += xs(a, t, w), q += double(xs(a, t, w)) * xs(a, t, w);
      near(s12(a), s);
      if (n > 0) near(m12(a), q / double(n * W));
    }
    // a bounded innermost axis reduced: [A, upto<T>] rows, then over them
    const Tensor<float, shape<A>> top = sum(Tensor<float, shape<A, upto<T>>>(max(x, axis<-1>)), axis<-1>);
    for (index_t a = 0; a < A; ++a) {
      double s = 0;
      for (index_t t = 0; t < n; ++t) s += *std::max_element(&xs(a, t, 0), &xs(a, t, 0) + W);
      near(top(a), s);
    }
    CHECK(worst <= 1e-5);
    if (n > 0) {
      // softmax along the bounded axis: its sums are reductions over it, at the root
      Tensor<float, shape<A, upto<T>, W>> p;
      poison(p);
      p = softmax(x, axis<1>);
      Tensor<float, shape<A, upto<T>, W>> po; // the online form, over the bounded axis
      poison(po);
      po = detail::softmax_online<detail::mask_holder<detail::canon(std::array<bool, 3>{false, true, false})>>(
          detail::as_node(x));
      double col = 0, apart = 0;
      for (index_t a = 0; a < A; ++a)
        for (index_t t = 0; t < n; ++t)
          for (index_t w = 0; w < W; ++w) apart = std::max(apart, double(std::fabs(po(a, t, w) - p(a, t, w))));
      CHECK(apart <= 1e-6);
      for (index_t a = 0; a < A; ++a)
        for (index_t w = 0; w < W; ++w) {
          double total = 0;
          for (index_t t = 0; t < n; ++t) total += p(a, t, w);
          col = std::max(col, std::fabs(total - 1));
        }
      CHECK(col <= 1e-5);
      index_t touched = 0;
      for (index_t a = 0; a < A; ++a)
        for (index_t t = n; t < T; ++t)
          for (index_t w = 0; w < W; ++w)
            touched += (p.data()[(a * T + t) * W + w] != sentinel) + (po.data()[(a * T + t) * W + w] != sentinel);
      CHECK(touched == 0);
    } else {
      Tensor<float, shape<A, W>> m;
      CHECK_THROWS_WITH(m = max(x, axis<1>), Catch::Contains("of length 0"));
    }
  }
}


namespace {
// `got` (bounded on any axis) against `want` (static, same capacities) at the active positions, and every
// element past the length still the sentinel.
template <class T, class B, class S>
void check_bounded(const Tensor<T, B>& got, const Tensor<T, S>& want, index_t length, double tol) {
  static_assert(B::size == S::size);
  REQUIRE(got.length() == length);
  constexpr int b = B::bounded_axis;
  index_t after = 1;
  for (int i = b + 1; i < B::rank; ++i) after *= B::dims[i];
  double worst = 0;
  index_t touched = 0;
  for (index_t k = 0; k < B::size; ++k) {
    if ((k / after) % B::dims[b] < length) worst = std::max(worst, double(std::fabs(got.data()[k] - want.data()[k])));
    else touched += got.data()[k] != T(sentinel);
  }
  CHECK(worst <= tol);
  CHECK(touched == 0);
}
} // namespace

TEST_CASE("upto<N> innermost and kept: reductions over the other axes run over its active columns") {
  constexpr index_t A = 3, C = 5, T = 40;
  Tensor<float, shape<A, T>> xs;
  Tensor<float, shape<A, C, T>> ys;
  fill(xs, 71);
  fill(ys, 72);
  for (index_t n : {index_t(1), index_t(19), index_t(40)}) {
    INFO("length " << n);
    Tensor<float, shape<A, upto<T>>> x;
    Tensor<float, shape<A, C, upto<T>>> y;
    load(x, xs, n);
    std::copy(ys.begin(), ys.end(), y.begin());
    y.set_length(n);
    // [A, upto<T>] over axis 0: one row of outputs
    Tensor<float, shape<upto<T>>> r;
    poison(r);
    r = sum(x, axis<0>);
    check_bounded(r, Tensor<float, shape<T>>(sum(xs, axis<0>)), n, 1e-6);
    poison(r);
    r = max(x, axis<0>);
    check_bounded(r, Tensor<float, shape<T>>(max(xs, axis<0>)), n, 0);
    // [A, C, upto<T>] over axis 1 (rows of outputs) and over axes 0 and 1
    Tensor<float, shape<A, upto<T>>> m;
    poison(m);
    m = mean(y, axis<1>);
    check_bounded(m, Tensor<float, shape<A, T>>(mean(ys, axis<1>)), n, 1e-6);
    poison(r);
    r = sum(square(y), axes<0, 1>);
    check_bounded(r, Tensor<float, shape<T>>(sum(square(ys), axes<0, 1>)), n, 1e-5);
    // kept and broadcast back: centred columns
    Tensor<float, shape<A, upto<T>>> c;
    poison(c);
    c = x - mean(x, axis<0>, keepdims);
    check_bounded(c, Tensor<float, shape<A, T>>(xs - mean(xs, axis<0>, keepdims)), n, 1e-6);
  }
}

TEST_CASE("upto<N>: a TensorMap of a bounded shape reads and writes only its active rows") {
  // The caller's memory holds just the active part (the rows below the length), plus a guard row.
  Tensor<float, shape<64, 16>> xs, ys;
  fill(xs, 11);
  fill(ys, 12);
  using B = shape<upto<64>, 16>;
  for (index_t n : {index_t(1), index_t(7), index_t(64)}) {
    INFO("length " << n);
    std::vector<float> out(std::size_t((n + 1) * 16), sentinel);
    const TensorMap<const float, B> x(xs.data(), n);
    TensorMap<const float, B> y(ys.data());
    CHECK(y.length() == 64); // made without a length: the capacity
    y.set_length(n);
    TensorMap<float, B> o(out.data(), n);
    o = exp(x) * 2.f + y * xs(0, 3) - 1.f;
    CHECK(o.length() == n);
    const Tensor<float, shape<64, 16>> want = exp(xs) * 2.f + ys * xs(0, 3) - 1.f;
    index_t wrong = 0, touched = 0;
    for (index_t i = 0; i < n * 16; ++i) wrong += out[std::size_t(i)] != want.data()[i];
    for (index_t i = n * 16; i < (n + 1) * 16; ++i) touched += out[std::size_t(i)] != sentinel;
    CHECK(wrong == 0);
    CHECK(touched == 0);
    CHECK_THROWS_AS(o(n, 0), error); // element access stops at the length
    CHECK(o(n - 1, 15) == want(n - 1, 15));
  }
  std::vector<float> buf(40, 0.f);
  CHECK_THROWS_AS((TensorMap<float, B>(buf.data(), 65)), error);
  CHECK_THROWS_AS((TensorMap<float, B>(buf.data(), -1)), error);
  TensorMap<float, B> m(buf.data(), 2);
  CHECK_THROWS_AS(m.set_length(65), error);
  CHECK(m.length() == 2); // a refused length changes nothing
  // operands of another length than the map's: an error, nothing written (a bounded Tensor would take
  // their length; a map covers only the memory its own length reaches)
  TensorMap<const float, B> a(xs.data(), 3);
  CHECK_THROWS_WITH(m = a * 2.f, Catch::Contains("of length 2 assigned operands of length 3"));
  CHECK(m.length() == 2);
  CHECK(std::all_of(buf.begin(), buf.end(), [](float v) { return v == 0.f; }));
}
