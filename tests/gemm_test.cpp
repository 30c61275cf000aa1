// The GEMM engine against a long-double reference: run-time shapes through cpu::gemm_range (every
// transpose combination, sizes of 1, primes and block edges, f32, f64, bf16 inputs, both store paths,
// any split into parts), then the evaluator's compile-time paths through matmul (small static sizes,
// batches, thread splits, epilogues with dtype conversion). Run-time shapes keep this file quick to
// compile: one instantiation covers hundreds of shapes.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstring>
#include <vector>

#include <tenfold/tenfold.hpp>

using namespace tenfold;
using cpu::gemm_range;
using cpu::matrix_ref;
using ld = long double;

namespace {
std::vector<float> random_values(index_t n, std::uint64_t seed) {
  std::vector<float> v(std::size_t(n > 0 ? n : 1));
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = -1.0f + 2.0f * float(s >> 40) * 0x1p-24f;
  }
  return v;
}

// A logical rows x cols operand, stored row-major or transposed (as cols x rows).
template <class E>
struct operand {
  std::vector<E> data;
  index_t rows, cols;
  bool transposed;
  operand(index_t r, index_t c, bool t, std::uint64_t seed) : rows(r), cols(c), transposed(t) {
    for (float x : random_values(r * c, seed)) data.push_back(E(x));
  }
  matrix_ref<E> ref() const { return transposed ? matrix_ref<E>{data.data(), 1, rows} : matrix_ref<E>{data.data(), cols, 1}; }
  ld at(index_t i, index_t k) const { return ld(float(transposed ? data[k * rows + i] : data[i * cols + k])); }
};

// |got - exact| within 4 K eps of the sum of |terms| (the bound for a K-term sum in T).
template <class T, class EA, class EB>
bool matches_reference(const operand<EA>& a, const operand<EB>& b, const T* c, index_t ldc) {
  const index_t M = a.rows, K = a.cols, N = b.cols;
  for (index_t i = 0; i < M; ++i)
    for (index_t j = 0; j < N; ++j) {
      ld s = 0, mag = 0;
      for (index_t k = 0; k < K; ++k) {
        const ld t = a.at(i, k) * b.at(k, j);
        s += t, mag += std::fabs(t);
      }
      const ld tol = 4.0L * ld(K) * std::numeric_limits<T>::epsilon() * mag + 1e-30L;
      if (!(std::fabs(ld(c[i * ldc + j]) - s) <= tol)) {
        UNSCOPED_INFO("element (" << i << ", " << j << "): got " << double(c[i * ldc + j]) << ", want " << double(s));
        return false;
      }
    }
  return true;
}

// C = A B through gemm_range, with the destination's rows padded by `pad` sentinels that must survive.
template <class T, class EA, class EB>
std::vector<T> run_direct(const operand<EA>& a, const operand<EB>& b, index_t parts, index_t pad, const cpu::gemm_config& cfg) {
  const index_t M = a.rows, K = a.cols, N = b.cols, ldc = N + pad;
  std::vector<T> c(std::size_t(M * ldc + 1), T(-12345));
  for (index_t p = 0; p < parts; ++p) {
    const auto r = cpu::gemm_split<T>(M, N, p, parts, cfg.split);
    gemm_range<T>(a.ref(), b.ref(), M, K, r, cpu::gemm_direct_out<T>{c.data(), ldc}, cfg);
  }
  return c;
}

// The same through the epilogue path: scratch blocks handed to a store callback.
template <class T, class EA, class EB>
std::vector<T> run_epilogue(const operand<EA>& a, const operand<EB>& b, const cpu::gemm_config& cfg) {
  const index_t M = a.rows, K = a.cols, N = b.cols;
  std::vector<T> c(std::size_t(M * N + 1), T(-12345));
  auto store = [&](const T* blk, index_t ldb, index_t i0, index_t mc, index_t j0, index_t nc) {
    for (index_t i = 0; i < mc; ++i) std::memcpy(&c[(i0 + i) * N + j0], blk + i * ldb, sizeof(T) * nc);
  };
  gemm_range<T>(a.ref(), b.ref(), M, K, {0, M, 0, N}, cpu::gemm_epilogue_out<decltype(store)>{store}, cfg);
  return c;
}

template <class T, class E = T>
void check_shape(index_t M, index_t K, index_t N, const cpu::gemm_config& cfg = {}) {
  for (int trans = 0; trans < 4; ++trans) {
    const operand<E> a(M, K, trans & 1, 100 + M + K), b(K, N, trans & 2, 200 + K + N);
    INFO("M=" << M << " K=" << K << " N=" << N << " A" << (trans & 1 ? "^T" : "") << " B" << (trans & 2 ? "^T" : ""));
    const index_t pad = 3;
    const auto c = run_direct<T>(a, b, 1, pad, cfg);
    REQUIRE(matches_reference<T>(a, b, c.data(), N + pad));
    bool pad_intact = c.back() == T(-12345);
    for (index_t i = 0; i < M; ++i)
      for (index_t j = N; j < N + pad; ++j) pad_intact = pad_intact && c[i * (N + pad) + j] == T(-12345);
    CHECK(pad_intact);
    // The epilogue path and any split into parts give the same bits: a thread count never changes a result.
    const auto e = run_epilogue<T>(a, b, cfg);
    bool same = true;
    for (index_t i = 0; i < M; ++i)
      for (index_t j = 0; j < N; ++j) same = same && e[i * N + j] == c[i * (N + pad) + j];
    CHECK(same);
    for (index_t parts : {2, 3}) {
      const auto s = run_direct<T>(a, b, parts, pad, cfg);
      CHECK(std::memcmp(s.data(), c.data(), sizeof(T) * c.size()) == 0);
    }
  }
}

template <class T, class S>
Tensor<T, S> random_tensor(std::uint64_t seed) {
  Tensor<T, S> t;
  const auto v = random_values(S::size, seed);
  index_t i = 0;
  for (auto& x : t) x = T(v[std::size_t(i++)]);
  return t;
}
} // namespace

TEST_CASE("gemm: run-time shapes with 1s, primes and block edges, every transpose, f32", "[gemm]") {
  for (index_t M : {1, 3, 14, 17, 29, 100})
    for (index_t N : {1, 3, 17, 32, 33, 100})
      for (index_t K : {1, 17, 64, 300}) check_shape<float>(M, K, N);
}

TEST_CASE("gemm: several MC, NC and KC blocks; B read in place for few rows", "[gemm]") {
  constexpr cpu::gemm_config d{};
  constexpr index_t MC = d.mc_panels * cpu::gemm_tile<float>::MR, NC = d.nc_panels * cpu::gemm_tile<float>::NR;
  constexpr index_t in_place = cpu::gemm_in_place_rows<float>;
  check_shape<float>(MC + 9, d.kc + 5, NC + 27);
  check_shape<float>(3, 2 * d.kc_in_place + 1, NC + 40); // in place, past one slice and NC
  check_shape<float>(in_place, 100, 77);                 // the largest in-place range
  check_shape<float>(in_place + 1, 100, 77);             // the smallest packed one
  check_shape<float>(in_place + 1, 45, 1100);            // packed rows a page apart (pack_b's prefetch), k past its last group
  // one row through a row-major B (gemm_one_row): strips of 8, 4, 2 and 1 vectors, a scalar tail (and,
  // cut in 2 and 3 parts, the same columns in other strips: the same bits)
  check_shape<float>(1, 70, 8 * 16 * 2 + 3 * 16 + 5);
  check_shape<float>(1, 90, (8 + 4 + 2 + 1) * 16 + 7);
  check_shape<float>(1, 33, 8 * 8 + 8 + 3); // (8-lane vectors)
  check_shape<float>(1, 41, (8 + 4 + 2 + 1) * 8 + 5);
  check_shape<double>(1, 29, (4 + 2 + 1) * 8 + 3);
}

// Every configuration tools/tune may choose must give the reference result: tiny blocks put every
// boundary inside small shapes, and forced split axes cut C the other way.
TEST_CASE("gemm: configurations the tuner may choose (blocking, k slices, split axis)", "[gemm][tune]") {
  using cpu::gemm_config, cpu::gemm_split_axis;
  const gemm_config tiny{.kc = 7, .mc_panels = 1, .nc_panels = 1, .kc_in_place = 3, .parts_per_thread = 1};
  const gemm_config wide{.kc = 512, .mc_panels = 48, .nc_panels = gemm_config::max_nc_panels, .kc_in_place = 128};
  const gemm_config by_rows{.split = gemm_split_axis::rows}, by_columns{.split = gemm_split_axis::columns};
  const gemm_config packed{.kc = 7, .nc_panels = 1, .in_place_rows = 1}; // (3 rows: B packed, not read in place)
  for (const gemm_config& cfg : {tiny, wide, by_rows, by_columns, packed}) {
    INFO("kc " << cfg.kc << ", mc_panels " << cfg.mc_panels << ", nc_panels " << cfg.nc_panels << ", split " << int(cfg.split));
    check_shape<float>(3, 20, 70, cfg);  // in place
    check_shape<float>(45, 33, 97, cfg); // packed, several blocks of each kind at `tiny`
    check_shape<double>(31, 19, 41, cfg);
  }
  // Out-of-range values are clamped, never read past a buffer: nc_panels above the convolution's row buffer.
  check_shape<float>(20, 10, 40, gemm_config{.kc = 0, .mc_panels = 0, .nc_panels = 1000, .kc_in_place = 0});
}

namespace {
// B read in place with its rows a multiple of 2 KiB apart (a panel's rows in one or two L1 sets) is read
// in k slices of kc_crowded rows (cpu::in_place_kc: 8 with 16 vector registers for fewer rows than a
// register tile, else kc_in_place): the bits of the same product through a B whose rows are padded apart (not
// crowded) in slices of that many rows (`isa_default`).
void check_crowded(index_t M, index_t N, const cpu::gemm_config& isa_default) {
  using cpu::gemm_config;
  const index_t K = 75, padded = N + 16;
  const operand<float> a(M, K, false, 300 + M), b(K, N, false, 400 + N);
  std::vector<float> bp(std::size_t(K * padded), 0.0f);
  for (index_t k = 0; k < K; ++k) std::memcpy(&bp[std::size_t(k * padded)], &b.data[std::size_t(k * N)], sizeof(float) * N);
  auto product = [&](const float* bv, index_t ldb, const gemm_config& cfg) {
    std::vector<float> c(std::size_t(M * N));
    gemm_range<float>(a.ref(), matrix_ref<float>{bv, ldb, 1}, M, K, {0, M, 0, N}, cpu::gemm_direct_out<float>{c.data(), N}, cfg);
    return c;
  };
  INFO("M=" << M << " N=" << N);
  const auto crowded = product(b.data.data(), N, {}), spread = product(bp.data(), padded, isa_default);
  REQUIRE(matches_reference<float>(a, b, crowded.data(), N));
  CHECK(crowded == spread);
  const auto crowded5 = product(b.data.data(), N, {.kc_crowded = 5}), spread5 = product(bp.data(), padded, {.kc_in_place = 5});
  REQUIRE(matches_reference<float>(a, b, crowded5.data(), N));
  CHECK(crowded5 == spread5);
}

// The product of M rows read through B in place (k slices of 16) against B packed in the same slices,
// and cut into parts.
void check_in_place_blocks(index_t M, index_t N) {
  constexpr index_t K = 75, kc = 16, pad = 3;
  const cpu::gemm_config in_place{.kc_in_place = kc}, packed{.kc = kc, .in_place_rows = 1};
  const operand<float> a(M, K, false, 500 + M), b(K, N, false, 600 + N);
  INFO("M=" << M << " N=" << N << (cpu::gemm_in_place_wide<float>(M) ? " (wide blocks)" : ""));
  const auto c = run_direct<float>(a, b, 1, pad, in_place);
  REQUIRE(matches_reference<float>(a, b, c.data(), N + pad));
  CHECK(c == run_direct<float>(a, b, 1, pad, packed));
  for (index_t parts : {2, 3, 5}) CHECK(c == run_direct<float>(a, b, parts, pad, in_place));
}
} // namespace

TEST_CASE("gemm: a few rows through a B whose rows are a multiple of 2 KiB apart", "[gemm][tune]") {
  constexpr bool avx2_like = !cpu::gemm_tile<float>::wide_file; // (16 vector registers)
  for (index_t N : {512, 1024 + 512}) { // (2 KiB and 6 KiB rows: two L1 sets)
    check_crowded(3, N, avx2_like ? cpu::gemm_config{.kc_in_place = 8} : cpu::gemm_config{});
    check_crowded(cpu::gemm_tile<float>::MR + 2, N, {}); // (two row blocks)
    check_crowded(cpu::gemm_in_place_rows<float>, N, {});
  }
}

// A few rows through a B read in place take, where cpu::gemm_in_place_wide says so (16 vector
// registers: M = 3, 4 and 7-12), blocks of up to 4 rows and panels of 3 vectors, the columns past the
// last such panel packed: the bits of the same product with B packed in slices of as many rows, and of
// any cut of its columns into parts (cut at multiples of the tile's NR: parts start inside a wide panel).
TEST_CASE("gemm: a few rows through a B read in place, in wider blocks", "[gemm]") {
  using G = cpu::gemm_tile<float>;
  using IP = cpu::gemm_in_place_tile<float>;
  STATIC_REQUIRE(cpu::gemm_in_place_wide<float>(8) == IP::used);
  STATIC_REQUIRE(cpu::gemm_in_place_wide<float>(3) == IP::used);
  STATIC_REQUIRE_FALSE(cpu::gemm_in_place_wide<float>(2));
  STATIC_REQUIRE_FALSE(cpu::gemm_in_place_wide<float>(G::MR)); // (one block of the tile's rows)
  for (index_t M = 2; M <= cpu::gemm_in_place_rows<float>; ++M)
    for (index_t r : {index_t(0), index_t(5), G::W, G::W + 3, G::NR, IP::NR - 1}) check_in_place_blocks(M, 5 * IP::NR + r);
}

// The first row block's kernels ask for the rows of B that the next panels need (cpu/gemm.hpp's
// row_major_prefetch; a prefetch changes no value, so the other cases cannot see it): walked as
// gemm_range walks B, the far streams ask for every row of every group of panels once, but the first
// block's first group, the near streams for every row of every full panel two on, and nothing outside B's
// rows [kb, ke) and the range's columns; for a B stored transposed, the next block's rows of w once each.
TEST_CASE("gemm: the first row block's kernels ask for each row of the coming panels once, inside B", "[gemm]") {
  constexpr index_t NR = cpu::gemm_tile<float>::NR, group = cpu::prefetch_group<float>;
  for (index_t rows : {0, 1, 5, 256, 301})
    for (index_t parts : {1, 2, 3, 14}) {
      index_t next = 0;
      for (index_t i = 0; i < parts; ++i) {
        const cpu::prefetch_share s = cpu::share_of(rows, i, parts);
        CHECK(s.first == next);
        next += s.rows;
      }
      CHECK(next == rows);
    }
  // a stream asks for exactly its rows over a kernel's kc steps, more rows than steps included
  std::vector<float> buf(4096);
  for (index_t kc : {1, 4, 256})
    for (index_t rows : {index_t(0), index_t(1), index_t(3), kc, kc + 5}) {
      cpu::panel_prefetch<float> st{buf.data(), 7, rows, 16};
      for (index_t k = 0; k < kc; ++k) st.step(kc);
      CHECK(st.p == buf.data() + rows * 7);
    }
  struct walk {
    index_t K, kb, ke, N, c0, c1, KC, NC, blocks;
  };
  const walk walks[] = {{300, 0, 300, 40 * NR + 5, 0, 40 * NR + 5, 64, 2 * group * NR + 3 * NR, 2},
                        {97, 10, 90, 9 * group * NR, group * NR, 7 * group * NR + 2 * NR, 256, 3 * group * NR, 3},
                        {45, 0, 45, group * NR - 1, 0, group * NR - 1, 20, group * NR, 1}};
  for (const walk& w : walks) {
    std::vector<float> b(std::size_t(w.K * w.N));
    const matrix_ref<float> bref{b.data(), w.N, 1};
    std::vector<int> far(b.size()), near(b.size()); // how often each line's first value is asked for
    bool inside = true;
    auto mark = [&](std::vector<int>& seen, const cpu::panel_prefetch<float>& st) {
      if (st.rows == 0) return;
      const index_t off = st.p - b.data(), row = off / w.N, col = off % w.N;
      inside = inside && row >= w.kb && row + st.rows <= w.ke && col >= w.c0 && col + st.width <= w.c1;
      for (index_t r = 0; r < st.rows; ++r)
        for (index_t c = 0; c < st.width; c += 16) ++seen[std::size_t((row + r) * w.N + col + c)];
    };
    // f(block, q, blk) for each asking kernel (full blocks over full panels), in gemm_range's order
    auto each_ask = [&](auto&& f) {
      for (index_t j0 = w.c0; j0 < w.c1; j0 += w.NC)
        for (index_t k0 = w.kb; k0 < w.ke; k0 += w.KC) {
          const cpu::packed_block pb{k0, std::min(w.KC, w.ke - k0), j0, std::min(w.NC, w.c1 - j0), w.kb, w.ke, w.c1, w.KC, w.NC};
          for (index_t q = 0; q + NR <= pb.nc; q += NR)
            for (index_t blk = 0; blk < w.blocks; ++blk) f(pb, q, blk);
        }
    };
    each_ask([&](const cpu::packed_block& pb, index_t q, index_t blk) {
      const auto s = cpu::row_major_prefetch<float>(bref, pb, q, blk, w.blocks);
      mark(near, s[0]);
      mark(far, s[1]);
    });
    CHECK(inside);
    bool near_once = true, far_once = true;
    for (index_t j0 = w.c0; j0 < w.c1; j0 += w.NC)
      for (index_t k = w.kb; k < w.ke; ++k) {
        const index_t full = std::min(w.NC, w.c1 - j0) / NR * NR;
        for (index_t c = 0; c < full; c += 16) {
          const std::size_t at = std::size_t(k * w.N + j0 + c);
          near_once = near_once && near[at] == (c >= 2 * NR ? 1 : 0);
          const bool first = j0 == w.c0 && k < w.kb + w.KC && c < group * NR;
          far_once = far_once && far[at] == (c < full / (group * NR) * (group * NR) && !first ? 1 : 0);
        }
      }
    CHECK(near_once);
    CHECK(far_once);
    // B stored transposed (w [N, K] read as wᵀ, packed by pack_b): the next block's rows of w, kc values
    // each, every block's but the first (where the block before has a full panel to ask from)
    std::vector<float> wt(std::size_t(w.N * w.K));
    const matrix_ref<float> tref{wt.data(), 1, w.K};
    std::vector<int> seen(wt.size());
    bool t_inside = true;
    each_ask([&](const cpu::packed_block& pb, index_t q, index_t blk) {
      const auto st = cpu::transposed_prefetch<float>(tref, pb, q, blk, w.blocks);
      if (st.rows == 0) return;
      const index_t off = st.p - wt.data(), n = off / w.K, k = off % w.K;
      t_inside = t_inside && n >= w.c0 && n + st.rows <= w.c1 && k >= w.kb && k + st.width <= w.ke && st.ld == w.K;
      for (index_t r = 0; r < st.rows; ++r)
        for (index_t c = 0; c < st.width; c += 16) ++seen[std::size_t((n + r) * w.K + k + c)];
    });
    CHECK(t_inside);
    bool t_once = true;
    index_t before = -1; // the columns of the block walked before
    for (index_t j0 = w.c0; j0 < w.c1; j0 += w.NC)
      for (index_t k0 = w.kb; k0 < w.ke; k0 += w.KC) {
        const index_t kc = std::min(w.KC, w.ke - k0), nc = std::min(w.NC, w.c1 - j0);
        for (index_t n = j0; n < j0 + nc; ++n)
          for (index_t c = 0; c < kc; c += 16) t_once = t_once && seen[std::size_t(n * w.K + k0 + c)] == (before >= NR ? 1 : 0);
        before = nc;
      }
    CHECK(t_once);
  }
}

// A matmul whose B is the larger operand goes along N unless its B is packed already or the
// configuration names an axis (the cut itself never changes a bit: the case above).
TEST_CASE("gemm: a matmul's automatic split axis", "[gemm]") {
  using cpu::gemm_split_axis, cpu::matmul_split_axis;
  constexpr auto automatic = gemm_split_axis::automatic;
  STATIC_REQUIRE(matmul_split_axis<float>(128, 384, false, automatic) == gemm_split_axis::columns); // xᵀ g
  STATIC_REQUIRE(matmul_split_axis<float>(128, 384, true, automatic) == automatic);                 // a Prepacked B
  STATIC_REQUIRE(matmul_split_axis<float>(768, 384, false, automatic) == automatic);                // M >= N
  STATIC_REQUIRE(matmul_split_axis<float>(384, 384, false, automatic) == automatic);
  STATIC_REQUIRE(matmul_split_axis<float>(4, cpu::gemm_tile<float>::NR + 4, false, automatic) == automatic); // N under two panels
  STATIC_REQUIRE(matmul_split_axis<float>(128, 384, false, gemm_split_axis::rows) == gemm_split_axis::rows);
  // A tuned `columns` spares each thread packing all of B: not where B is packed already (MiniLM's
  // Prepacked weights at 32 x 128 would have each thread pack all of A).
  STATIC_REQUIRE(matmul_split_axis<float>(4096, 1152, true, gemm_split_axis::columns) == automatic);
  STATIC_REQUIRE(matmul_split_axis<float>(4096, 1152, false, gemm_split_axis::columns) == gemm_split_axis::columns);
  // A forced axis with fewer tiles than parts leaves no part empty: the automatic choice holds there.
  {
    constexpr index_t NR = cpu::gemm_tile<float>::NR, MR = cpu::gemm_tile<float>::MR;
    const cpu::gemm_part narrow = cpu::gemm_split<float>(1000, NR, 1, 2, gemm_split_axis::columns);
    CHECK((narrow.r0 > 0 && narrow.r1 == 1000 && narrow.c0 == 0 && narrow.c1 == NR)); // cut along M
    const cpu::gemm_part flat = cpu::gemm_split<float>(MR, 1000, 1, 2, gemm_split_axis::rows);
    CHECK((flat.r0 == 0 && flat.r1 == MR && flat.c0 > 0 && flat.c1 == 1000)); // cut along N
    const cpu::gemm_part wide = cpu::gemm_split<float>(1000, 4 * NR, 1, 2, gemm_split_axis::columns);
    CHECK((wide.r0 == 0 && wide.r1 == 1000 && wide.c0 == 2 * NR && wide.c1 == 4 * NR)); // as forced
  }
  // Through eval on the pool (ctest runs this with 1 and 2 threads), M < N, so cut along N: bit for bit
  // the single range, with A row-major and transposed (a weight's gradient xᵀ g), bare and with an
  // epilogue (scratch blocks of every row and a part's columns).
  const auto x = random_tensor<float, shape<96, 200>>(21);
  const auto xt = random_tensor<float, shape<200, 96>>(22);
  const auto w = random_tensor<float, shape<200, 400>>(23);
  const auto bias = random_tensor<float, shape<400>>(24);
  Tensor<float, shape<96, 400>> y = matmul(x, w), yt = matmul(transpose(xt), w), z = relu(matmul(transpose(xt), w) + bias);
  Tensor<float, shape<96, 400>> ys, yts;
  const auto cfg = cpu::gemm_config_for<float>(96, 400, 200);
  cpu::gemm_range<float>(cpu::matrix_ref<float>{x.data(), 200, 1}, cpu::matrix_ref<float>{w.data(), 400, 1}, 96, 200,
                         {0, 96, 0, 400}, cpu::gemm_direct_out<float>{ys.data(), 400}, cfg);
  cpu::gemm_range<float>(cpu::matrix_ref<float>{xt.data(), 1, 96}, cpu::matrix_ref<float>{w.data(), 400, 1}, 96, 200,
                         {0, 96, 0, 400}, cpu::gemm_direct_out<float>{yts.data(), 400}, cfg);
  CHECK(std::memcmp(y.data(), ys.data(), sizeof(float) * 96 * 400) == 0);
  CHECK(std::memcmp(yt.data(), yts.data(), sizeof(float) * 96 * 400) == 0);
  bool epilogue_same = true;
  for (int i = 0; i < 96; ++i)
    for (int j = 0; j < 400; ++j) epilogue_same = epilogue_same && z(i, j) == std::max(yts(i, j) + bias(j), 0.0f);
  CHECK(epilogue_same);
}

// The tuned table: every entry usable, and a lookup that falls back to the defaults.
TEST_CASE("gemm: the tuned table's entries and the lookup", "[gemm][tune]") {
  using cpu::gemm_shape_class;
  for (const auto& e : tuned::gemm_cpu) {
    INFO(e.machine.isa << " " << e.machine.l1d_kib << " KiB L1d, " << e.machine.l2_kib << " KiB L2, " << e.machine.cores << " cores, " << cpu::name_of(e.shape));
    CHECK(e.config.kc >= 1);
    CHECK(e.config.kc_in_place >= 1);
    CHECK(e.config.in_place_rows >= 0);
    CHECK(e.config.mc_panels >= 1);
    CHECK((e.config.nc_panels >= 1 && e.config.nc_panels <= cpu::gemm_config::max_nc_panels));
    CHECK(e.config.parts_per_thread >= 1);
    CHECK(e.machine.cores >= 1);
    int same_key = 0;
    for (const auto& f : tuned::gemm_cpu) same_key += f.machine == e.machine && f.shape == e.shape;
    CHECK(same_key == 1);
  }
  STATIC_REQUIRE(cpu::gemm_shape_class_of(16, 4096, 4096) == gemm_shape_class::few_rows);
  STATIC_REQUIRE(cpu::gemm_shape_class_of(17, 64, 64) == gemm_shape_class::small);
  STATIC_REQUIRE(cpu::gemm_shape_class_of(128, 128, 127) == gemm_shape_class::small);
  STATIC_REQUIRE(cpu::gemm_shape_class_of(128, 128, 128) == gemm_shape_class::medium);
  STATIC_REQUIRE(cpu::gemm_shape_class_of(512, 512, 512) == gemm_shape_class::large);
  STATIC_REQUIRE(cpu::gemm_config_for<double>(512, 512, 512) == cpu::gemm_config{}); // f32 measurements only
  if (build_machine.cores == 0) // a build that does not say its machine gets the defaults
    CHECK(cpu::gemm_config_for<float>(512, 512, 512) == cpu::gemm_config{});
}

TEST_CASE("gemm: f64 and bf16 inputs with f32 accumulation", "[gemm]") {
  for (index_t M : {1, 7, 29})
    for (index_t N : {1, 9, 33})
      for (index_t K : {1, 13, 300}) {
        check_shape<double>(M, K, N);
        check_shape<float, bf16>(M, K, N);
      }
}

template <index_t M, index_t K, index_t N, class T = float>
void check_static() {
  const auto a = random_tensor<T, shape<M, K>>(M * 3 + K);
  const auto at = random_tensor<T, shape<K, M>>(M * 5 + K);
  const auto b = random_tensor<T, shape<K, N>>(K * 7 + N);
  const auto bias = random_tensor<T, shape<N>>(N);
  Tensor<T, shape<M, N>> c = matmul(a, b), ct = matmul(transpose(at), b), cr = relu(matmul(a, b) + bias);
  static_assert(plan_of<decltype(relu(matmul(a, b) + bias))>::nests == 1);
  bool ok = true;
  for (index_t i = 0; i < M; ++i)
    for (index_t j = 0; j < N; ++j) {
      ld s = 0, st = 0, mag = 0, magt = 0;
      for (index_t k = 0; k < K; ++k) {
        s += ld(a(i, k)) * b(k, j), mag += std::fabs(ld(a(i, k)) * b(k, j));
        st += ld(at(k, i)) * b(k, j), magt += std::fabs(ld(at(k, i)) * b(k, j));
      }
      const ld tol = 4.0L * K * std::numeric_limits<T>::epsilon();
      ok = ok && std::fabs(c(i, j) - s) <= tol * mag && std::fabs(ct(i, j) - st) <= tol * magt;
      ok = ok && std::fabs(cr(i, j) - std::max<ld>(s + bias(j), 0)) <= tol * (mag + 1);
    }
  INFO("M=" << M << " K=" << K << " N=" << N);
  CHECK(ok);
}

TEST_CASE("gemm: small static sizes take the unpacked path and stay exact", "[gemm][small]") {
  using L = detail::leaf<float, shape<4, 4>, detail::canon(std::array<index_t, 2>{4, 1}), 0, detail::ref_holder<float>>;
  static_assert(cpu::use_small_gemm<detail::matmul_node<L, L>, float>(), "4x4 row-major runs unpacked");
  using LT = detail::leaf<float, shape<4, 4>, detail::canon(std::array<index_t, 2>{1, 4}), 0, detail::ref_holder<float>>;
  static_assert(!cpu::use_small_gemm<detail::matmul_node<L, LT>, float>(), "a transposed B is packed");
  check_static<4, 4, 4>();
  check_static<16, 16, 16>();
  check_static<64, 64, 64>();
  check_static<128, 128, 128>(); // the largest: its epilogue block lives in the GEMM scratch, not the stack
  check_static<127, 64, 256>();  // >= 4 MFLOP: with two threads, halves of 63 and 64 rows
  check_static<5, 7, 12>();  // N = 12: 128-bit rows on AVX-512, and an M edge
  check_static<3, 1, 8>();   // K = 1
  check_static<8, 8, 8, double>();
  check_static<13, 9, 3>();  // no vector width divides N: the general path
}

TEST_CASE("gemm: batches with broadcasting, and one product split across threads", "[gemm][determinism]") {
  const auto a = random_tensor<float, shape<2, 1, 40, 70>>(1);
  const auto b = random_tensor<float, shape<3, 70, 90>>(2);
  Tensor<float, shape<2, 3, 40, 90>> c = matmul(a, b);
  bool ok = true;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i < 40; ++i)
        for (int j = 0; j < 90; ++j) {
          ld s = 0, mag = 0;
          for (int k = 0; k < 70; ++k) s += ld(a(p, 0, i, k)) * b(q, k, j), mag += std::fabs(ld(a(p, 0, i, k)) * b(q, k, j));
          ok = ok && std::fabs(c(p, q, i, j) - s) <= 4 * 70 * std::numeric_limits<float>::epsilon() * mag;
        }
  CHECK(ok);
  // Large enough to be split over the pool (TENFOLD_NUM_THREADS; ctest runs this with 1 and 2): the
  // result must be bit for bit the single-range one with the same configuration (a machine's tuned
  // entry may slice k differently from the defaults, which changes the bits).
  const auto x = random_tensor<float, shape<300, 200>>(3);
  const auto w = random_tensor<float, shape<200, 260>>(4);
  Tensor<float, shape<300, 260>> y = matmul(x, w);
  Tensor<float, shape<300, 260>> serial;
  gemm_range<float>(matrix_ref<float>{x.data(), 200, 1}, matrix_ref<float>{w.data(), 260, 1}, 300, 200, {0, 300, 0, 260},
                    cpu::gemm_direct_out<float>{serial.data(), 260}, cpu::gemm_config_for<float>(300, 260, 200));
  CHECK(std::memcmp(y.data(), serial.data(), sizeof(float) * 300 * 260) == 0);
  // Large enough for twice as many parts as threads, handed out dynamically.
  const auto xl = random_tensor<float, shape<600, 300>>(7);
  const auto wl = random_tensor<float, shape<300, 600>>(8);
  Tensor<float, shape<600, 600>> yl = matmul(xl, wl);
  Tensor<float, shape<600, 600>> yls;
  gemm_range<float>(matrix_ref<float>{xl.data(), 300, 1}, matrix_ref<float>{wl.data(), 600, 1}, 600, 300, {0, 600, 0, 600},
                    cpu::gemm_direct_out<float>{yls.data(), 600}, cpu::gemm_config_for<float>(600, 600, 300));
  CHECK(std::memcmp(yl.data(), yls.data(), sizeof(float) * 600 * 600) == 0);
  // The same split with an epilogue (scratch blocks, then bias and relu in the store).
  const auto bl = random_tensor<float, shape<600>>(9);
  Tensor<float, shape<600, 600>> zl = relu(matmul(xl, wl) + bl);
  bool epilogue_same = true;
  for (int i = 0; i < 600; ++i)
    for (int j = 0; j < 600; ++j) epilogue_same = epilogue_same && zl(i, j) == std::max(yls(i, j) + bl(j), 0.0f);
  CHECK(epilogue_same);
  // A few rows (the inference case), split along N.
  const auto t = random_tensor<float, shape<4, 512>>(5);
  const auto wt = random_tensor<float, shape<512, 1024>>(6);
  Tensor<float, shape<4, 1024>> z = matmul(t, wt);
  Tensor<float, shape<4, 1024>> zs;
  gemm_range<float>(matrix_ref<float>{t.data(), 512, 1}, matrix_ref<float>{wt.data(), 1024, 1}, 4, 512, {0, 4, 0, 1024},
                    cpu::gemm_direct_out<float>{zs.data(), 1024}, cpu::gemm_config_for<float>(4, 1024, 512));
  CHECK(std::memcmp(z.data(), zs.data(), sizeof(float) * 4 * 1024) == 0);
  // A few rows through a weight stored [N, K] (PyTorch's layout: dot products of rows), with a K that
  // is not a whole number of vectors, bare and with a bias + gelu in the store.
  const auto rows = random_tensor<float, shape<13, 389>>(10);
  const auto wn = random_tensor<float, shape<1030, 389>>(11);
  const auto bias = random_tensor<float, shape<1030>>(12);
  Tensor<float, shape<13, 1030>> d = matmul(rows, transpose(wn)), ds;
  Tensor<float, shape<13, 1030>> de = gelu(linear(rows, wn, bias));
  gemm_range<float>(matrix_ref<float>{rows.data(), 389, 1}, matrix_ref<float>{wn.data(), 1, 389}, 13, 389, {0, 13, 0, 1030},
                    cpu::gemm_direct_out<float>{ds.data(), 1030}, cpu::gemm_config_for<float>(13, 1030, 389));
  CHECK(std::memcmp(d.data(), ds.data(), sizeof(float) * 13 * 1030) == 0);
  bool dot_ok = true, dot_epilogue = true;
  for (int i = 0; i < 13; ++i)
    for (int j = 0; j < 1030; ++j) {
      ld s = 0, mag = 0;
      for (int k = 0; k < 389; ++k) s += ld(rows(i, k)) * wn(j, k), mag += std::fabs(ld(rows(i, k)) * wn(j, k));
      dot_ok = dot_ok && std::fabs(d(i, j) - s) <= 4 * 389 * std::numeric_limits<float>::epsilon() * mag;
      const float x = ds(i, j) + bias(j);
      dot_epilogue = dot_epilogue && std::fabs(de(i, j) - 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f)))) <= 1e-6f;
    }
  CHECK(dot_ok);
  CHECK(dot_epilogue);
}

TEST_CASE("gemm: a few rows through a weight stored [N, K], the columns cut in two", "[gemm][determinism]") {
  // gemm_dot_rows with a long K whose tail is not a whole vector, 11 rows (two blocks of four and a short
  // one), the columns cut in two rectangles as two threads would: within the bound of a 1500-term sum, and
  // the same bits whichever rectangle computes an element.
  constexpr index_t M = 11, N = 70, K = 1500;
  const auto rows = random_tensor<float, shape<M, K>>(21);
  const auto wn = random_tensor<float, shape<N, K>>(22);
  Tensor<float, shape<M, N>> whole, halves;
  const matrix_ref<float> a{rows.data(), K, 1}, b{wn.data(), 1, K};
  const auto cfg = cpu::gemm_config_for<float>(M, N, K);
  gemm_range<float>(a, b, M, K, {0, M, 0, N}, cpu::gemm_direct_out<float>{whole.data(), N}, cfg);
  gemm_range<float>(a, b, M, K, {0, M, 0, 37}, cpu::gemm_direct_out<float>{halves.data(), N}, cfg);
  gemm_range<float>(a, b, M, K, {0, M, 37, N}, cpu::gemm_direct_out<float>{halves.data(), N}, cfg);
  CHECK(std::memcmp(whole.data(), halves.data(), sizeof(float) * M * N) == 0);
  int bad = 0;
  for (index_t i = 0; i < M; ++i)
    for (index_t j = 0; j < N; ++j) {
      ld s = 0, mag = 0;
      for (index_t k = 0; k < K; ++k) s += ld(rows(i, k)) * wn(j, k), mag += std::fabs(ld(rows(i, k)) * wn(j, k));
      bad += !(std::fabs(whole(i, j) - s) <= 4 * K * std::numeric_limits<float>::epsilon() * mag);
    }
  CHECK(bad == 0);
}

TEST_CASE("gemm: one register tile of long sums is cut along k, the slices added in order", "[gemm][determinism]") {
  // (A first layer's weight gradient has this shape: 9 x 16 outputs, each a sum over the batch's
  // positions; a second layer's is 144 x 32.) The bits must be those of the slices' single-range products added in slice order,
  // whatever the pool size (ctest runs this with 1 and 2 threads), and close to the exact sums.
  constexpr index_t M = 9, N = 16, K = 20011;
  constexpr index_t slices = cpu::gemm_k_slices<float>(M, N, K);
  static_assert(slices > 1 && cpu::gemm_k_slices<float>(M, N, 1000) == 1 && cpu::gemm_k_slices<float>(300, 300, K) == 1 &&
                cpu::gemm_k_slices<float>(2048, 2048, 2048) == 1 && cpu::gemm_k_slices<float>(144, 32, 12544) > 1);
  const auto a = random_tensor<float, shape<M, K>>(13);
  const auto b = random_tensor<float, shape<K, N>>(14);
  const auto bias = random_tensor<float, shape<N>>(15);
  Tensor<float, shape<M, N>> c = matmul(a, b), fused = relu(matmul(a, b) + bias);
  const cpu::gemm_config cfg = cpu::gemm_config_for<float>(M, N, K);
  std::vector<float> sum(M * N), part(M * N);
  for (index_t s = 0; s < slices; ++s) {
    const index_t k0 = cpu::gemm_k_slice_start(K, s, slices, cfg.kc), k1 = cpu::gemm_k_slice_start(K, s + 1, slices, cfg.kc);
    REQUIRE(k0 < k1);
    gemm_range<float>(matrix_ref<float>{a.data(), K, 1}, matrix_ref<float>{b.data(), N, 1}, M, K, {0, M, 0, N, k0, k1},
                      cpu::gemm_direct_out<float>{part.data(), N}, cfg);
    for (index_t i = 0; i < M * N; ++i) sum[i] = s == 0 ? part[i] : sum[i] + part[i];
  }
  CHECK(std::memcmp(c.data(), sum.data(), sizeof(float) * M * N) == 0);
  bool close = true, epilogue = true;
  for (index_t i = 0; i < M; ++i)
    for (index_t j = 0; j < N; ++j) {
      ld e = 0, mag = 0;
      for (index_t k = 0; k < K; ++k) e += ld(a(i, k)) * b(k, j), mag += std::fabs(ld(a(i, k)) * b(k, j));
      close = close && std::fabs(c(i, j) - e) <= 4 * K * std::numeric_limits<float>::epsilon() * mag;
      epilogue = epilogue && fused(i, j) == std::max(c(i, j) + bias(j), 0.0f);
    }
  CHECK(close);
  CHECK(epilogue);
}

TEST_CASE("gemm: bf16 operands, dtype conversion and activations in the store", "[gemm]") {
  const auto a = random_tensor<bf16, shape<37, 70>>(7);
  const auto b = random_tensor<bf16, shape<70, 45>>(8);
  const auto res = random_tensor<float, shape<37, 45>>(9);
  Tensor<float, shape<37, 45>> c = matmul(a, b);        // f32 out: accumulated in f32
  Tensor<bf16, shape<37, 45>> cb = matmul(a, b);        // bf16 out: rounded once, in the store
  auto fused = gelu(matmul(a, b)) * 0.5f + res;         // activation, scaling and a residual add
  static_assert(plan_of<decltype(fused)>::nests == 1 && plan_of<decltype(fused)>::buffers == 0);
  Tensor<double, shape<37, 45>> g = fused;              // and a conversion to f64 in the same store
  bool ok = true, rounded = true, fused_ok = true;
  for (int i = 0; i < 37; ++i)
    for (int j = 0; j < 45; ++j) {
      ld s = 0, mag = 0;
      for (int k = 0; k < 70; ++k) s += ld(float(a(i, k))) * ld(float(b(k, j))), mag += std::fabs(ld(float(a(i, k))) * ld(float(b(k, j))));
      ok = ok && std::fabs(c(i, j) - s) <= 4 * 70 * std::numeric_limits<float>::epsilon() * mag;
      rounded = rounded && cb(i, j).bits == bf16(c(i, j)).bits;
      const double x = double(c(i, j)), want = 0.5 * x * 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + res(i, j);
      fused_ok = fused_ok && std::fabs(g(i, j) - want) <= 1e-5 * (1 + std::fabs(want));
    }
  CHECK(ok);
  CHECK(rounded);
  CHECK(fused_ok);
}

// A Prepacked weight (cpu/prepacked.hpp) reads as its weight everywhere, and the GEMM reads its panels
// instead of packing wᵀ: the same bits as the plain tensor, whatever the rows (the packed kernels for
// many, the dot products of rows for a few), the batch axes folded into M, several k slices and a
// partial last panel (N = 37), a store with bias and activation, and a view the panels do not match.
template <index_t M, index_t N, index_t K>
void check_prepacked(std::uint64_t seed) {
  const auto x = random_tensor<float, shape<M, K>>(seed);
  const auto w = random_tensor<float, shape<N, K>>(seed + 1);
  const auto b = random_tensor<float, shape<N>>(seed + 2);
  const Prepacked<float, shape<N, K>> wp = w;
  Tensor<float, shape<M, N>> plain = matmul(x, transpose(w)), packed = matmul(x, transpose(wp));
  CHECK(std::memcmp(plain.data(), packed.data(), sizeof(float) * M * N) == 0);
  Tensor<float, shape<M, N>> plain_e = relu(linear(x, w, b)), packed_e = relu(linear(x, wp, b));
  CHECK(std::memcmp(plain_e.data(), packed_e.data(), sizeof(float) * M * N) == 0);
  // against long double, so that the two are not equal by being wrong alike
  bool ok = true;
  for (index_t i = 0; i < M; ++i)
    for (index_t j = 0; j < N; ++j) {
      ld s = 0, mag = 0;
      for (index_t k = 0; k < K; ++k) s += ld(x(i, k)) * w(j, k), mag += std::fabs(ld(x(i, k)) * w(j, k));
      ok = ok && std::fabs(packed(i, j) - s) <= 4 * K * std::numeric_limits<float>::epsilon() * mag;
    }
  CHECK(ok);
}

TEST_CASE("gemm: a Prepacked weight gives the bits of the plain one", "[gemm][prepacked]") {
  check_prepacked<16, 37, 75>(20);   // packed kernels, a partial panel
  check_prepacked<5, 37, 75>(23);    // a few rows: dot products of rows, the panels unused
  check_prepacked<70, 300, 600>(26); // several k slices, row blocks and panels (and threads)
  // batch axes folded into M: [3, 20, K] x wᵀ
  const auto x3 = random_tensor<float, shape<3, 20, 75>>(30);
  const auto w = random_tensor<float, shape<37, 75>>(31);
  Prepacked<float, shape<37, 75>> wp;
  wp = w;
  Tensor<float, shape<3, 20, 37>> p3 = matmul(x3, transpose(w)), q3 = matmul(x3, transpose(wp));
  CHECK(std::memcmp(p3.data(), q3.data(), sizeof(float) * 3 * 20 * 37) == 0);
  // w itself as the right operand (not wᵀ): packed as usual, the same values
  const auto xs = random_tensor<float, shape<20, 24>>(32);
  const auto ws = random_tensor<float, shape<24, 24>>(33);
  const Prepacked<float, shape<24, 24>> wsp = ws;
  Tensor<float, shape<20, 24>> ps = matmul(xs, ws), qs = matmul(xs, wsp);
  CHECK(std::memcmp(ps.data(), qs.data(), sizeof(float) * 20 * 24) == 0);
  // an elementwise read sees the weight
  Tensor<float, shape<37, 75>> twice = wp + wp;
  bool same = true;
  for (index_t i = 0; i < 37; ++i)
    for (index_t k = 0; k < 75; ++k) same = same && twice(i, k) == 2 * w(i, k);
  CHECK(same);
  // the product reads the panels (zeroed behind the weight's back here), not the weight
  Prepacked<float, shape<37, 75>> zeroed = w;
  std::fill_n(const_cast<float*>(zeroed.panels()), zeroed.panel_floats, 0.0f);
  const auto x70 = random_tensor<float, shape<70, 75>>(34);
  Tensor<float, shape<70, 37>> z70 = matmul(x70, transpose(zeroed));
  CHECK(std::all_of(z70.data(), z70.data() + 70 * 37, [](float v) { return v == 0.0f; }));
  // written through weights() and not packed since: an error, not stale panels; pack() mends it
  wp.weights()(0, 0) = 5.0f;
  Tensor<float, shape<3, 20, 37>> r3;
  CHECK_THROWS_WITH(r3 = matmul(x3, transpose(wp)), Catch::Contains("Prepacked") && Catch::Contains("pack()"));
  wp.pack();
  Tensor<float, shape<37, 75>> w2 = wp.tensor();
  r3 = matmul(x3, transpose(wp));
  p3 = matmul(x3, transpose(w2));
  CHECK(std::memcmp(p3.data(), r3.data(), sizeof(float) * 3 * 20 * 37) == 0);
}
