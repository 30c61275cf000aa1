// conv2d against a naive long-double reference over a grid of geometries (stride, padding, dilation,
// groups incl. depthwise, kernels 1x1 / 3x3 / 5x3, odd sizes, batch 1 and 3), both layouts, f32 and
// f64; the element-wise fallback (`at`); strided (permuted) inputs and non-leaf operands; the fused
// bias + relu / residual epilogue against the separate computation; thread splits against one
// single-range GEMM, bit for bit ([determinism], also run with 1 and 2 threads); NCHW computed in NHWC's
// form against the NHWC convolution, bit for bit; the plan (one nest).
// conv_transpose2d is in conv_transpose_test.cpp.
#include "conv_test_support.hpp"

using namespace conv_testing;

namespace {
// The grid: every value of each parameter appears, in combinations that reach the packing's edges
// (padding on both sides, a dilated window wider than the stride, ragged panels, several k-slices).
constexpr conv_case grid[] = {
    {.n = 1, .c = 3, .h = 7, .w = 9, .oc = 5, .kh = 1, .kw = 1},                                      // pointwise: plain GEMM
    {.n = 3, .c = 3, .h = 7, .w = 9, .oc = 4, .kh = 3, .kw = 3, .ph = 1, .pw = 1},                    // same padding
    {.n = 1, .c = 5, .h = 7, .w = 9, .oc = 3, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1},  // strided
    {.n = 1, .c = 3, .h = 9, .w = 7, .oc = 2, .kh = 5, .kw = 3, .ph = 2, .pw = 2, .dh = 2, .dw = 2},  // dilated, 5x3
    {.n = 3, .c = 4, .h = 9, .w = 9, .oc = 6, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 2, .dw = 2, .groups = 2},
    {.n = 1, .c = 4, .h = 7, .w = 9, .oc = 4, .kh = 3, .kw = 3, .ph = 1, .pw = 1, .groups = 2},
    {.n = 1, .c = 3, .h = 7, .w = 9, .oc = 3, .kh = 3, .kw = 3, .ph = 1, .pw = 1, .groups = 3},       // depthwise
    {.n = 2, .c = 1, .h = 7, .w = 9, .oc = 4, .kh = 3, .kw = 3, .ph = 1, .pw = 1},                    // one channel: panels of contiguous taps
    {.n = 3, .c = 3, .h = 7, .w = 9, .oc = 6, .kh = 5, .kw = 3, .sh = 2, .sw = 2, .ph = 2, .pw = 2, .groups = 3},
    {.n = 3, .c = 3, .h = 7, .w = 9, .oc = 5, .kh = 5, .kw = 3, .sh = 2, .sw = 2, .ph = 2, .pw = 2},
    {.n = 1, .c = 5, .h = 7, .w = 9, .oc = 3, .kh = 1, .kw = 1, .sh = 2, .sw = 2},                    // strided 1x1
    {.n = 3, .c = 3, .h = 7, .w = 9, .oc = 5, .kh = 1, .kw = 1, .ph = 1, .pw = 1},                    // padded 1x1
    {.n = 1, .c = 3, .h = 7, .w = 9, .oc = 5, .kh = 3, .kw = 3, .sh = 1, .sw = 2, .ph = 2, .pw = 0, .dh = 2, .dw = 1},
    // Few channels on wider images: whole panels inside the image (strided, dilated), and a 7 x 7 stem
    // whose 147 taps are laid out in several chunks.
    {.n = 2, .c = 3, .h = 11, .w = 29, .oc = 5, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1},
    {.n = 2, .c = 1, .h = 11, .w = 23, .oc = 4, .kh = 3, .kw = 3, .ph = 2, .pw = 2, .dh = 2, .dw = 2},
    {.n = 1, .c = 3, .h = 12, .w = 20, .oc = 4, .kh = 7, .kw = 7, .sh = 2, .sw = 2, .ph = 3, .pw = 3},
    // Large enough for several k-slices (K = 288 > KC), row blocks and a thread split.
    {.n = 2, .c = 32, .h = 17, .w = 15, .oc = 40, .kh = 3, .kw = 3, .ph = 1, .pw = 1},
    {.n = 1, .c = 16, .h = 9, .w = 11, .oc = 8, .kh = 3, .kw = 3, .ph = 2, .pw = 1, .dh = 2, .dw = 1},  // whole vectors, dilated
    // Whole vectors, strided: a panel's rows read every other input column (the padding's columns
    // found per run of an output row), and panels of 14 rows span output rows of 9.
    {.n = 2, .c = 16, .h = 13, .w = 17, .oc = 8, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1},
    // Output rows of 28 (whole panels, or 28/30 of them with 6-row tiles): the windows read in place
    // over a padded copy (cpu/conv_padded.hpp): one channel, whole vectors in two groups, dilated.
    {.n = 2, .c = 1, .h = 5, .w = 28, .oc = 16, .kh = 3, .kw = 3, .ph = 1, .pw = 1},
    {.n = 2, .c = 32, .h = 4, .w = 30, .oc = 8, .kh = 3, .kw = 3, .ph = 1, .pw = 0, .dh = 2, .dw = 1, .groups = 2},
};

template <class T, bool Nhwc, conv_case P>
void check_case() {
  using W = std::conditional_t<Nhwc, shape<P.kh, P.kw, P.c / P.groups, P.oc>, shape<P.oc, P.c / P.groups, P.kh, P.kw>>;
  Tensor<T, x_shape<P, Nhwc>> x;
  Tensor<T, W> w;
  fill(x, 1), fill(w, 2);
  auto e = conv2d(x, w, stride<P.sh, P.sw>, padding<P.ph, P.pw>, dilation<P.dh, P.dw>, groups<P.groups>,
                  layout_tag<Nhwc ? conv_layout::nhwc : conv_layout::nchw>);
  using E = decltype(e);
  Tensor<T, typename E::shape_type> y = e;
  const reference r = naive(P, Nhwc, false, x.data(), w.data());
  require_close<T>(y, r, E::str().c_str());
  if constexpr (std::is_same_v<T, float>) { // the same through the epilogue store (not C itself)
    Tensor<T, typename E::shape_type> y1 = e + T(0);
    for (index_t i = 0; i < y.size(); ++i) REQUIRE(y1.data()[i] == y.data()[i]);
  }
}

template <class T, bool Nhwc>
void check_grid() {
  [&]<std::size_t... I>(std::index_sequence<I...>) { (check_case<T, Nhwc, grid[I]>(), ...); }(std::make_index_sequence<std::size(grid)>{});
}
} // namespace

TEST_CASE("conv2d NCHW f32 matches the long-double reference over the grid", "[conv]") { check_grid<float, false>(); }
TEST_CASE("conv2d NHWC f32 matches the long-double reference over the grid", "[conv]") { check_grid<float, true>(); }
TEST_CASE("conv2d NCHW f64 matches the long-double reference over the grid", "[conv]") { check_grid<double, false>(); }
TEST_CASE("conv2d NHWC f64 matches the long-double reference over the grid", "[conv]") { check_grid<double, true>(); }

namespace {
// y = e through cpu::run_conv with the lowerings InPlace / Turn and blocking cfg, prepared as eval prepares
// it (as tools/tune times it).
template <bool InPlace, bool Turn, class Y, class E>
void eval_with_config(Y& y, E&& e, const cpu::gemm_config& cfg) {
  auto root = detail::expand_to<typename Y::shape_type>(detail::as_node(std::forward<E>(e)));
  const auto dst = detail::as_destination(y);
  using P = arena_plan<decltype(root), std::remove_const_t<decltype(dst)>>;
  static_assert(P::bytes == 0);
  cpu::arena_buffers slots{nullptr, P::offsets.data(), P::buffers};
  cpu::run_conv<InPlace, Turn>(dst, plan::prepare_root(std::move(root), slots), cfg);
}
template <bool Nhwc, conv_case P>
void check_configs() {
  using W = std::conditional_t<Nhwc, shape<P.kh, P.kw, P.c / P.groups, P.oc>, shape<P.oc, P.c / P.groups, P.kh, P.kw>>;
  Tensor<float, x_shape<P, Nhwc>> x;
  Tensor<float, W> w;
  fill(x, 3), fill(w, 4);
  auto e = conv2d(x, w, stride<P.sh, P.sw>, padding<P.ph, P.pw>, dilation<P.dh, P.dw>, groups<P.groups>,
                  layout_tag<Nhwc ? conv_layout::nhwc : conv_layout::nchw>);
  using E = decltype(e);
  const reference r = naive(P, Nhwc, false, x.data(), w.data());
  const cpu::gemm_config blockings[] = {{}, {.kc = 128, .mc_panels = 8, .split = cpu::gemm_split_axis::columns},
                                        {.kc = 64, .mc_panels = 4, .parts_per_thread = 1, .split = cpu::gemm_split_axis::rows}};
  for (const cpu::gemm_config& cfg : blockings) {
    INFO("kc " << cfg.kc << ", mc_panels " << cfg.mc_panels);
    Tensor<float, typename E::shape_type> y;
    eval_with_config<true, true>(y, e, cfg), require_close<float>(y, r, "in place, turned");
    eval_with_config<true, false>(y, e, cfg), require_close<float>(y, r, "in place, not turned");
    eval_with_config<false, false>(y, e, cfg), require_close<float>(y, r, "packed");
  }
  if constexpr (Nhwc && cpu::conv_reads_a_in_place<float, E>(cpu::gemm_config{})) {
    Tensor<float, typename E::shape_type> y;
    CHECK_THROWS_AS((eval_with_config<true, true>(y, e, {.kc = 100})), tenfold::error); // not whole vectors
  }
}
} // namespace

TEST_CASE("conv2d: every lowering and blocking tools/tune tries matches the reference", "[conv][tune]") {
  // Windows read in place or packed, NCHW turned into NHWC or not, and blockings off the defaults (k
  // slices of 64 over K = 288, row blocks of 4 panels, splits along either axis), on geometries where
  // each lowering applies.
  constexpr conv_case wide{.n = 2, .c = 32, .h = 4, .w = 28, .oc = 40, .kh = 3, .kw = 3, .ph = 1, .pw = 1};
  constexpr conv_case one_channel{.n = 2, .c = 1, .h = 5, .w = 28, .oc = 16, .kh = 3, .kw = 3, .ph = 1, .pw = 1};
  check_configs<true, wide>(), check_configs<false, wide>();
  check_configs<true, one_channel>(), check_configs<false, one_channel>();
  check_configs<true, grid[16]>(), check_configs<false, grid[16]>();
}

TEST_CASE("conv2d: the node's own at() (the fallback and device path) matches the reference", "[conv]") {
  constexpr conv_case P{.n = 2, .c = 4, .h = 7, .w = 9, .oc = 6, .kh = 5, .kw = 3, .sh = 2, .sw = 1, .ph = 2, .pw = 1, .dh = 1, .dw = 2, .groups = 2};
  Tensor<float, shape<2, 4, 7, 9>> x;
  Tensor<float, shape<6, 2, 5, 3>> w;
  fill(x, 3), fill(w, 4);
  const auto e = conv2d(x, w, stride<2, 1>, padding<2, 1>, dilation<1, 2>, groups<2>);
  const reference r = naive(P, false, false, x.data(), w.data());
  using S = decltype(e)::shape_type;
  Tensor<float, S> y;
  for (index_t i = 0; i < S::size; ++i) {
    index_t idx[4];
    detail::unravel<S>(i, idx);
    y.data()[i] = float(e.at(idx));
  }
  require_close<float>(y, r, "at()");
  // Integer convolutions run through at() in the evaluator.
  Tensor<std::int32_t, shape<1, 2, 5, 5>> xi;
  Tensor<std::int32_t, shape<3, 2, 3, 3>> wi;
  for (index_t i = 0; i < xi.size(); ++i) xi.data()[i] = std::int32_t(i % 7) - 3;
  for (index_t i = 0; i < wi.size(); ++i) wi.data()[i] = std::int32_t(i % 5) - 2;
  Tensor<std::int32_t, shape<1, 3, 5, 5>> yi = conv2d(xi, wi, padding<1>);
  std::vector<float> xf(xi.begin(), xi.end()), wf(wi.begin(), wi.end());
  const reference ri = naive(conv_case{.n = 1, .c = 2, .h = 5, .w = 5, .oc = 3, .kh = 3, .kw = 3, .ph = 1, .pw = 1}, false, false, xf.data(), wf.data());
  for (index_t i = 0; i < yi.size(); ++i) REQUIRE(ld(yi.data()[i]) == ri.value[std::size_t(i)]);
}

TEST_CASE("conv2d reads strided inputs in place and materialises computed operands", "[conv]") {
  Tensor<float, shape<2, 3, 7, 9>> x_nchw;
  Tensor<float, shape<3, 3, 3, 4>> w; // HWIO
  fill(x_nchw, 5), fill(w, 6);
  // NHWC conv of a permuted (non-contiguous) view: the packing walks the view's strides.
  Tensor<float, shape<2, 7, 9, 4>> y = conv2d(permute<0, 2, 3, 1>(x_nchw), w, padding<1>, nhwc);
  Tensor<float, shape<2, 7, 9, 3>> x_nhwc = permute<0, 2, 3, 1>(x_nchw);
  const reference r = naive(conv_case{.n = 2, .c = 3, .h = 7, .w = 9, .oc = 4, .kh = 3, .kw = 3, .ph = 1, .pw = 1}, true, false,
                            x_nhwc.data(), w.data());
  require_close<float>(y, r, "permuted input");
  // A computed input is materialised first (one buffer, two nests), with the same result.
  using Computed = decltype(conv2d(x_nhwc * 2.0f, w, padding<1>, nhwc));
  static_assert(plan_of<Computed>::nests == 2 && plan_of<Computed>::buffers == 1);
  Tensor<float, shape<2, 7, 9, 4>> y2 = conv2d(x_nhwc * 2.0f, w, padding<1>, nhwc);
  for (index_t i = 0; i < y.size(); ++i) REQUIRE(y2.data()[i] == 2.0f * y.data()[i]); // scaling by 2 is exact
}

// The epilogue: bias + relu and a residual add are applied in the GEMM's store, one nest, no buffer.
namespace {
Tensor<float, shape<3, 8, 9, 7>> ex;
Tensor<float, shape<16, 8, 3, 3>> ew;
Tensor<float, shape<16, 1, 1>> eb;
Tensor<float, shape<3, 16, 9, 7>> eres;
Tensor<float, shape<3, 9, 7, 8>> hx;
Tensor<float, shape<3, 3, 8, 16>> hwt;
Tensor<float, shape<16>> hb;
} // namespace
static_assert(plan_of<decltype(relu(conv2d(ex, ew, padding<1>) + eb))>::nests == 1);
static_assert(plan_of<decltype(relu(conv2d(ex, ew, padding<1>) + eb))>::buffers == 0);
static_assert(plan_of<decltype(conv2d(ex, ew, padding<1>) + eres)>::nests == 1);
static_assert(plan_of<decltype(relu(conv2d(hx, hwt, padding<1>, nhwc) + hb))>::nests == 1);
static_assert(plan_of<decltype(relu(conv2d(hx, hwt, padding<1>, nhwc) + hb))>::buffers == 0);
// Read by anything but an elementwise consumer at its own shape, a conv materialises (like matmul).
static_assert(plan_of<decltype(sum(conv2d(ex, ew, padding<1>), axis<1>))>::buffers == 1);
namespace {
Tensor<float, shape<4, 16, 3, 3>> ew2;
}
static_assert(plan_of<decltype(conv2d(relu(conv2d(ex, ew, padding<1>)), ew2))>::nests == 2);
static_assert(plan_of<decltype(conv2d(relu(conv2d(ex, ew, padding<1>)), ew2))>::buffers == 1);
static_assert(arena_plan<decltype(sum(conv2d(ex, ew, padding<1>), axis<1>))>::bytes >= 3 * 16 * 9 * 7 * 4);

TEST_CASE("conv2d: bias + relu and residual adds fused into the store equal the separate computation", "[conv]") {
  fill(ex, 7), fill(ew, 8), fill(eb, 9), fill(eres, 10), fill(hx, 11), fill(hwt, 12), fill(hb, 13);
  Tensor<float, shape<3, 16, 9, 7>> plain = conv2d(ex, ew, padding<1>);
  Tensor<float, shape<3, 16, 9, 7>> fused = relu(conv2d(ex, ew, padding<1>) + eb);
  Tensor<float, shape<3, 16, 9, 7>> separate = relu(plain + eb);
  for (index_t i = 0; i < fused.size(); ++i) REQUIRE(fused.data()[i] == separate.data()[i]);
  Tensor<float, shape<3, 16, 9, 7>> residual = conv2d(ex, ew, padding<1>) + eres;
  Tensor<float, shape<3, 16, 9, 7>> residual_sep = plain + eres;
  for (index_t i = 0; i < residual.size(); ++i) REQUIRE(residual.data()[i] == residual_sep.data()[i]);
  // NHWC, with the bias along the last axis; and a conversion to f64 in the store.
  Tensor<float, shape<3, 9, 7, 16>> hplain = conv2d(hx, hwt, padding<1>, nhwc);
  Tensor<float, shape<3, 9, 7, 16>> hfused = relu(conv2d(hx, hwt, padding<1>, nhwc) + hb);
  Tensor<float, shape<3, 9, 7, 16>> hsep = relu(hplain + hb);
  for (index_t i = 0; i < hfused.size(); ++i) REQUIRE(hfused.data()[i] == hsep.data()[i]);
  Tensor<double, shape<3, 9, 7, 16>> hwide = conv2d(hx, hwt, padding<1>, nhwc);
  for (index_t i = 0; i < hwide.size(); ++i) REQUIRE(hwide.data()[i] == double(hplain.data()[i]));
}

// Thread splits: the evaluator's result (split over the pool as it sees fit) against one single-range
// product over the same operands, bit for bit. ctest runs this with 1 and 2 threads.
TEST_CASE("conv2d split over threads gives the bits of the single-range GEMM", "[conv][determinism]") {
  Tensor<float, shape<1, 32, 17, 15>> x;
  Tensor<float, shape<40, 32, 3, 3>> w;
  Tensor<float, shape<40, 1, 1>> b;
  fill(x, 14), fill(w, 15), fill(b, 16);
  Tensor<float, shape<1, 40, 17, 15>> y = conv2d(x, w, padding<1>);
  Tensor<float, shape<1, 40, 17, 15>> yf = relu(conv2d(x, w, padding<1>) + b);
  using Cv = decltype(conv2d(x, w, padding<1>));
  using XL = Cv::x_type;
  constexpr index_t M = 40, N = 17 * 15, K = 32 * 9;
  Tensor<float, shape<1, 40, 17, 15>> serial;
  static constexpr cpu::conv_dims dims = cpu::conv_dims_of<Cv>();
  cpu::gemm_range<float>(cpu::conv_weight_ref<float>{w.data(), &dims}, cpu::im2col_cols_ref<float>{x.data(), &dims}, M, K,
                         cpu::gemm_part{0, M, 0, N}, cpu::gemm_direct_out<float>{serial.data(), N},
                         cpu::conv_gemm_config); // the evaluator's configuration
  static_assert(std::is_same_v<XL, detail::node_t<Tensor<float, shape<1, 32, 17, 15>>&>>);
  for (index_t i = 0; i < y.size(); ++i) REQUIRE(y.data()[i] == serial.data()[i]);
  Tensor<float, shape<1, 40, 17, 15>> serial_fused = relu(serial + b);
  for (index_t i = 0; i < y.size(); ++i) REQUIRE(yf.data()[i] == serial_fused.data()[i]);

  // NHWC: one product with the batch's positions as rows.
  Tensor<float, shape<2, 17, 15, 32>> hx;
  Tensor<float, shape<3, 3, 32, 40>> hwt;
  fill(hx, 17), fill(hwt, 18);
  Tensor<float, shape<2, 17, 15, 40>> hy = conv2d(hx, hwt, padding<1>, nhwc);
  using Hv = decltype(conv2d(hx, hwt, padding<1>, nhwc));
  Tensor<float, shape<2, 17, 15, 40>> hserial;
  static constexpr cpu::conv_dims hdims = cpu::conv_dims_of<Hv>();
  cpu::gemm_range<float>(cpu::im2col_rows_ref<float>{hx.data(), &hdims}, cpu::conv_weight_ref<float>{hwt.data(), &hdims}, 2 * 17 * 15, K,
                         cpu::gemm_part{0, 2 * 17 * 15, 0, 40}, cpu::gemm_direct_out<float>{hserial.data(), 40},
                         cpu::conv_gemm_config);
  for (index_t i = 0; i < hy.size(); ++i) REQUIRE(hy.data()[i] == hserial.data()[i]);

  // One output tile of long sums (a first layer's weight gradient as autodiff writes it: x with the
  // batch as its channels, g as a 16 x 16 kernel, 3 x 3 outputs): cut along k (gemm_k_slices), the
  // slices' products added in slice order whatever the pool size; bare and with an epilogue, and with
  // the kernel a permuted view (g [batch, 16, 16, OC] read in place, as autodiff reads it).
  Tensor<float, shape<1, 16, 16, 80>> kx;
  Tensor<float, shape<16, 16, 80, 16>> kk;
  Tensor<float, shape<16>> kb;
  fill(kx, 19), fill(kk, 20), fill(kb, 21);
  using Kv = decltype(conv2d(kx, kk, padding<1>, nhwc));
  constexpr index_t KM = 9, KN = 16, KK = 16 * 16 * 80, slices = cpu::gemm_k_slices<float>(KM, KN, KK);
  static_assert(slices > 1);
  Tensor<float, shape<1, 3, 3, 16>> ky = conv2d(kx, kk, padding<1>, nhwc), kyf = relu(conv2d(kx, kk, padding<1>, nhwc) + kb);
  static constexpr cpu::conv_dims kdims = cpu::conv_dims_of<Kv>();
  const cpu::gemm_config kcfg = cpu::conv_gemm_config;
  std::vector<float> ksum(KM * KN), kpart(KM * KN);
  for (index_t s = 0; s < slices; ++s) {
    cpu::gemm_range<float>(cpu::im2col_rows_ref<float>{kx.data(), &kdims}, cpu::weight_operand<Kv>(kk.data()), KM, KK,
                           cpu::gemm_part{0, KM, 0, KN, cpu::gemm_k_slice_start(KK, s, slices, kcfg.kc),
                                          cpu::gemm_k_slice_start(KK, s + 1, slices, kcfg.kc)},
                           cpu::gemm_direct_out<float>{kpart.data(), KN}, kcfg);
    for (index_t i = 0; i < KM * KN; ++i) ksum[i] = s == 0 ? kpart[i] : ksum[i] + kpart[i];
  }
  for (index_t i = 0; i < ky.size(); ++i) REQUIRE(ky.data()[i] == ksum[i]);
  for (index_t i = 0; i < ky.size(); ++i) REQUIRE(kyf.data()[i] == std::max(ksum[i] + kb.data()[i % 16], 0.0f));
  const conv_case kc{1, 80, 16, 16, 16, 16, 16, 1, 1, 1, 1};
  require_close<float>(ky, naive<float>(kc, true, false, kx.data(), kk.data()), "k-sliced conv");
  Tensor<float, shape<80, 16, 16, 16>> kg; // the kernel as g: [batch, H, W, OC]
  for (index_t n = 0; n < 80; ++n)
    for (index_t i = 0; i < 16; ++i)
      for (index_t j = 0; j < 16; ++j)
        for (index_t o = 0; o < 16; ++o) kg(n, i, j, o) = kk(i, j, n, o);
  Tensor<float, shape<1, 3, 3, 16>> kyv = conv2d(kx, permute<1, 2, 0, 3>(kg), padding<1>, nhwc);
  require_close<float>(kyv, naive<float>(kc, true, false, kx.data(), kk.data()), "k-sliced conv, strided kernel");
}

// An NCHW convolution turned into its NHWC form (cpu/conv.hpp: the padded copy written channels-last,
// C's blocks transposed back): the NHWC convolution of the same values, bit for bit, bare (transposed
// straight into y's planes) and through a fused store (a transposed block, then the epilogue); batch 3,
// so that blocks of C's rows span images. ctest runs it with 1 and 2 threads.
TEST_CASE("conv2d NCHW turned into its NHWC form gives the NHWC convolution's bits", "[conv][determinism]") {
  Tensor<float, shape<3, 32, 6, 28>> x; // NCHW
  Tensor<float, shape<24, 32, 3, 3>> w; // OIHW
  Tensor<float, shape<24, 1, 1>> b;
  fill(x, 40), fill(w, 41), fill(b, 42);
  static_assert(cpu::conv_turned<float, decltype(conv2d(x, w, padding<1>))>()); // 32 channels: whole vectors on any ISA
  Tensor<float, shape<3, 6, 28, 32>> hx = permute<0, 2, 3, 1>(x);
  Tensor<float, shape<3, 3, 32, 24>> hw = permute<2, 3, 1, 0>(w);
  Tensor<float, shape<3, 6, 28, 24>> hy = conv2d(hx, hw, padding<1>, nhwc);
  Tensor<float, shape<3, 24, 6, 28>> y = conv2d(x, w, padding<1>), yf = relu(conv2d(x, w, padding<1>) + b);
  for (index_t n = 0; n < 3; ++n)
    for (index_t c = 0; c < 24; ++c)
      for (index_t i = 0; i < 6; ++i)
        for (index_t j = 0; j < 28; ++j) {
          REQUIRE(y(n, c, i, j) == hy(n, i, j, c));
          REQUIRE(yf(n, c, i, j) == std::max(hy(n, i, j, c) + b(c, 0, 0), 0.0f));
        }
  const conv_case p{.n = 3, .c = 32, .h = 6, .w = 28, .oc = 24, .kh = 3, .kw = 3, .ph = 1, .pw = 1};
  require_close<float>(y, naive<float>(p, false, false, x.data(), w.data()), "turned NCHW conv");
  // Not turned: a first layer's single channel (too few FLOPs per output for the transposes).
  Tensor<float, shape<3, 1, 6, 28>> x1;
  static_assert(!cpu::conv_turned<float, decltype(conv2d(x1, Tensor<float, shape<24, 1, 3, 3>>{}, padding<1>))>());
}

// NHWC windows read in place over a padded copy of the input (cpu/conv_padded.hpp): the same values in
// the same order as the packed panels, so the same bits. Each geometry through both A operands of
// gemm_range (whatever the ISA's heuristic would choose), over all rows and over the rows from the
// second image on (a part's copy starts at its first image).
namespace {
template <class Cv, class X, class Wt>
void require_in_place_bits(const X& x, const Wt& w) {
  constexpr index_t OHW = Cv::OH * Cv::OW, M = Cv::N * OHW, N = Cv::OCg, K = Cv::Cg * Cv::KH * Cv::KW;
  static_assert(Cv::groups == 1 && Cv::nhwc);
  static constexpr cpu::conv_dims d = cpu::conv_dims_of<Cv>();
  const cpu::gemm_config cfg = cpu::conv_gemm_config;
  REQUIRE(cfg.kc % cpu::conv_a_group<float, Cv> == 0);
  std::vector<float> packed(M * N), in_place(M * N);
  cpu::gemm_range<float>(cpu::im2col_rows_ref<float>{x.data(), &d}, cpu::weight_operand<Cv>(w.data()), M, K, cpu::gemm_part{0, M, 0, N},
                         cpu::gemm_direct_out<float>{packed.data(), N}, cfg);
  for (index_t first : {index_t(0), OHW}) {
    const auto a = cpu::pad_images<float, cpu::conv_a_lda<Cv>, cpu::conv_a_group<float, Cv>>(x.data(), d, first / OHW, Cv::N);
    std::fill(in_place.begin(), in_place.end(), -1.0f);
    cpu::gemm_range<float>(a, cpu::weight_operand<Cv>(w.data()), M, K, cpu::gemm_part{first, M, 0, N},
                           cpu::gemm_direct_out<float>{in_place.data(), N}, cfg);
    for (index_t i = first * N; i < M * N; ++i) REQUIRE(in_place[i] == packed[i]);
  }
}
template <conv_case P, bool Transposed>
void check_in_place() {
  using W = std::conditional_t<Transposed, shape<P.kh, P.kw, P.oc, P.c>, shape<P.kh, P.kw, P.c, P.oc>>;
  Tensor<float, x_shape<P, true>> x;
  Tensor<float, W> w;
  fill(x, 30), fill(w, 31);
  if constexpr (Transposed)
    require_in_place_bits<decltype(conv_transpose2d(x, w, padding<P.ph, P.pw>, dilation<P.dh, P.dw>, nhwc))>(x, w);
  else require_in_place_bits<decltype(conv2d(x, w, stride<P.sh, P.sw>, padding<P.ph, P.pw>, dilation<P.dh, P.dw>, nhwc))>(x, w);
}
} // namespace

TEST_CASE("conv2d NHWC: windows read in place over a padded copy give the packed panels' bits", "[conv][determinism]") {
  check_in_place<conv_case{.n = 3, .c = 16, .h = 6, .w = 14, .oc = 32, .kh = 3, .kw = 3, .ph = 1, .pw = 1}, false>();   // whole vectors
  check_in_place<conv_case{.n = 2, .c = 32, .h = 13, .w = 13, .oc = 8, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1}, false>();
  check_in_place<conv_case{.n = 2, .c = 64, .h = 5, .w = 14, .oc = 16, .kh = 3, .kw = 3, .ph = 1, .pw = 1}, false>(); // 3 k slices
  check_in_place<conv_case{.n = 2, .c = 1, .h = 9, .w = 23, .oc = 16, .kh = 3, .kw = 3, .ph = 2, .pw = 2, .dh = 2, .dw = 2}, false>();
  check_in_place<conv_case{.n = 2, .c = 3, .h = 9, .w = 20, .oc = 5, .kh = 5, .kw = 3, .sh = 1, .sw = 2, .ph = 2, .pw = 0}, false>();
  // transposed, stride 1 (a convolution's input gradient): the taps walked backwards
  check_in_place<conv_case{.n = 2, .c = 32, .h = 5, .w = 14, .oc = 16, .kh = 3, .kw = 3, .ph = 1, .pw = 1}, true>();
  check_in_place<conv_case{.n = 1, .c = 16, .h = 6, .w = 9, .oc = 8, .kh = 3, .kw = 2, .ph = 2, .pw = 0, .dh = 2, .dw = 1}, true>();
  // The CNN's layers take it with 14-row tiles (AVX-512; output rows of 28 and 14).
  using C1 = decltype(conv2d(std::declval<Tensor<float, shape<64, 28, 28, 1>>&>(), std::declval<Tensor<float, shape<3, 3, 1, 16>>&>(), padding<1>, nhwc));
  using C2 = decltype(conv2d(std::declval<Tensor<float, shape<64, 14, 14, 16>>&>(), std::declval<Tensor<float, shape<3, 3, 16, 32>>&>(), padding<1>, nhwc));
  static_assert(cpu::gemm_tile<float>::MR != 14 ||
                (cpu::conv_reads_a_in_place<float, C1>(cpu::gemm_config{}) && cpu::conv_reads_a_in_place<float, C2>(cpu::gemm_config{})));
}

// The weights' gradient in the form autodiff writes it for NHWC (autodiff/conv_adjoint.hpp), with both
// operands views of x and g in memory: a convolution of x viewed with the batch as its channels (a
// channel stride of a whole image: the packing's strided path) and g viewed as the kernel. Against the
// long-double gradient, into the weights' layout and into the node's own, and the same bits on the pool
// as inside one task (one thread).
namespace {
template <index_t B, index_t H, index_t W, index_t C, index_t OC, index_t S, index_t P, index_t D = 1>
void check_weight_gradient() {
  constexpr index_t K = 3, OH = (H + 2 * P - D * (K - 1) - 1) / S + 1, OW = (W + 2 * P - D * (K - 1) - 1) / S + 1;
  Tensor<float, shape<B, H, W, C>> x;
  Tensor<float, shape<B, OH, OW, OC>> g;
  fill(x, 40), fill(g, 41);
  auto node = [&] { return conv2d(permute<3, 1, 2, 0>(x), permute<1, 2, 0, 3>(g), stride<D>, dilation<S>, padding<P>, nhwc); };
  static_assert(decltype(node())::OH == K && decltype(node())::OW == K);
  Tensor<float, shape<K, K, C, OC>> dw = permute<1, 2, 0, 3>(node());
  Tensor<float, shape<C, K, K, OC>> dw_node = node();
  reference r;
  r.value.assign(std::size_t(dw.size()), 0), r.magnitude.assign(r.value.size(), 0), r.terms = B * OH * OW;
  for (index_t kh = 0; kh < K; ++kh)
    for (index_t kw = 0; kw < K; ++kw)
      for (index_t c = 0; c < C; ++c)
        for (index_t o = 0; o < OC; ++o) {
          const std::size_t i = std::size_t(((kh * K + kw) * C + c) * OC + o);
          for (index_t n = 0; n < B; ++n)
            for (index_t oh = 0; oh < OH; ++oh)
              for (index_t ow = 0; ow < OW; ++ow) {
                const index_t ih = oh * S - P + kh * D, iw = ow * S - P + kw * D;
                if (ih < 0 || iw < 0 || ih >= H || iw >= W) continue;
                const ld t = ld(x(n, ih, iw, c)) * ld(g(n, oh, ow, o));
                r.value[i] += t, r.magnitude[i] += std::fabs(t);
              }
        }
  require_close<float>(dw, r, "weight gradient");
  for (index_t kh = 0; kh < K; ++kh)
    for (index_t kw = 0; kw < K; ++kw)
      for (index_t c = 0; c < C; ++c)
        for (index_t o = 0; o < OC; ++o) REQUIRE(dw_node(c, kh, kw, o) == dw(kh, kw, c, o));
  Tensor<float, shape<K, K, C, OC>> one_thread;
  cpu::parallel_for(2, 1, 1, [&](index_t b, index_t) { // (a pool task: the evaluation inside runs on its thread alone)
    if (b == 0) one_thread = permute<1, 2, 0, 3>(node());
  });
  for (index_t i = 0; i < dw.size(); ++i) REQUIRE(one_thread.data()[i] == dw.data()[i]);
}
} // namespace

TEST_CASE("conv2d: a weight gradient over views of x and g in memory", "[conv][determinism]") {
  check_weight_gradient<64, 28, 28, 1, 16, 1, 1>(); // a first layer's: 9 outputs of long sums, cut along k
  check_weight_gradient<16, 14, 14, 16, 32, 1, 1>();
  check_weight_gradient<3, 9, 11, 16, 8, 2, 1>(); // a strided convolution's (the node dilated)
  check_weight_gradient<3, 7, 8, 3, 5, 1, 0>();   // no padding, 3 channels
  check_weight_gradient<2, 9, 9, 5, 6, 1, 2, 2>(); // a dilated one's (the node strided)
}

// A small CNN as a program: conv -> bias + relu (in the first GEMM's store) -> conv. The arena holds
// exactly the first activation, which the second conv reads as its packed operand.
namespace {
struct tiny_cnn {
  Tensor<float, shape<8, 3, 3, 3>> w1;
  Tensor<float, shape<8, 1, 1>> b1;
  Tensor<float, shape<4, 8, 3, 3>> w2;
  auto parameters() const { return std::tie(w1, b1, w2); }
  auto forward(const Tensor<float, shape<2, 3, 9, 7>>& x) const {
    return conv2d(relu(conv2d(x, w1, padding<1>) + b1), w2, stride<2>);
  }
};
using cnn_plan = program_plan<const tiny_cnn, Tensor<float, shape<2, 3, 9, 7>>>;
static_assert(cnn_plan::buffers == 1);
static_assert(cnn_plan::arena_bytes == 2 * 8 * 9 * 7 * 4 && cnn_plan::arena_bytes == cnn_plan::lower_bound);
static_assert(std::is_same_v<cnn_plan::output_type, Tensor<float, shape<2, 4, 4, 3>>>);
} // namespace

TEST_CASE("conv2d in a program: the planned arena holds the activation between two convs", "[conv]") {
  tiny_cnn m;
  fill(m.w1, 20), fill(m.b1, 21), fill(m.w2, 22);
  Tensor<float, shape<2, 3, 9, 7>> x;
  fill(x, 23);
  program<const tiny_cnn, Tensor<float, shape<2, 3, 9, 7>>> run(m);
  Tensor<float, shape<2, 4, 4, 3>> y = run(x);
  Tensor<float, shape<2, 8, 9, 7>> h = relu(conv2d(x, m.w1, padding<1>) + m.b1);
  Tensor<float, shape<2, 4, 4, 3>> expected = conv2d(h, m.w2, stride<2>);
  for (index_t i = 0; i < y.size(); ++i) REQUIRE(y.data()[i] == expected.data()[i]);
  // and the chain against the long-double reference, layer by layer
  const reference r = naive(conv_case{.n = 2, .c = 8, .h = 9, .w = 7, .oc = 4, .kh = 3, .kw = 3, .sh = 2, .sw = 2}, false, false, h.data(), m.w2.data());
  require_close<float>(y, r, "program");
}
