// conv_transpose2d against a naive long-double reference written as PyTorch defines it (each input
// element scatters its kernel-weighted copy into the output), over a grid of strides, paddings,
// output paddings, dilations, groups (incl. depthwise) and kernels, both layouts, f32 and f64; the
// node's at(); the fused epilogue and the plan. conv2d is in conv_test.cpp.
#include "conv_test_support.hpp"

using namespace conv_testing;

namespace {
// oc is the number of output channels per group (the weights' extent).
constexpr conv_case grid[] = {
    {.n = 1, .c = 3, .h = 7, .w = 9, .oc = 5, .kh = 1, .kw = 1},                                                  // pointwise
    {.n = 3, .c = 3, .h = 7, .w = 9, .oc = 4, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .oph = 1, .opw = 1},
    {.n = 1, .c = 4, .h = 7, .w = 9, .oc = 3, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 2, .dw = 2, .groups = 2},
    {.n = 1, .c = 3, .h = 9, .w = 7, .oc = 2, .kh = 5, .kw = 3, .ph = 2, .pw = 2, .dh = 2, .dw = 2},
    {.n = 3, .c = 3, .h = 7, .w = 9, .oc = 1, .kh = 5, .kw = 3, .sh = 2, .sw = 2, .ph = 2, .pw = 2, .groups = 3, .oph = 1, .opw = 1},
    {.n = 1, .c = 4, .h = 7, .w = 9, .oc = 3, .kh = 3, .kw = 3, .sh = 2, .sw = 1, .ph = 1, .pw = 1, .groups = 2, .oph = 1},
    {.n = 3, .c = 5, .h = 7, .w = 9, .oc = 3, .kh = 3, .kw = 3, .sh = 1, .sw = 2, .ph = 0, .pw = 1, .dh = 2, .dw = 1, .oph = 1, .opw = 1},
    {.n = 1, .c = 5, .h = 7, .w = 9, .oc = 3, .kh = 1, .kw = 1, .sh = 2, .sw = 2},                                // strided 1x1
    // Several k-slices (K = 288 > KC) and row blocks.
    {.n = 2, .c = 32, .h = 9, .w = 8, .oc = 24, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .oph = 1, .opw = 1},
    // Stride 1, whole vectors of channels (a conv's input gradient; NHWC packs whole taps as a
    // convolution with the taps walked backwards), dilated.
    {.n = 2, .c = 32, .h = 7, .w = 9, .oc = 16, .kh = 3, .kw = 3, .ph = 2, .pw = 1, .dh = 2, .dw = 1},
    // Output rows of 28: the input read in place over a padded copy (cpu/conv_padded.hpp).
    {.n = 2, .c = 16, .h = 4, .w = 28, .oc = 8, .kh = 3, .kw = 3, .ph = 1, .pw = 1},
};

template <class T, bool Nhwc, conv_case P>
void check_case() {
  using W = std::conditional_t<Nhwc, shape<P.kh, P.kw, P.oc, P.c>, shape<P.c, P.oc, P.kh, P.kw>>;
  Tensor<T, x_shape<P, Nhwc>> x;
  Tensor<T, W> w;
  fill(x, 1), fill(w, 2);
  auto e = conv_transpose2d(x, w, stride<P.sh, P.sw>, padding<P.ph, P.pw>, output_padding<P.oph, P.opw>, dilation<P.dh, P.dw>,
                            groups<P.groups>, layout_tag<Nhwc ? conv_layout::nhwc : conv_layout::nchw>);
  using E = decltype(e);
  static_assert(E::OH == out_extent(P.h, P.kh, P.sh, P.ph, P.dh, P.oph, true) && E::OW == out_extent(P.w, P.kw, P.sw, P.pw, P.dw, P.opw, true));
  Tensor<T, typename E::shape_type> y = e;
  const reference r = naive(P, Nhwc, true, x.data(), w.data());
  require_close<T>(y, r, E::str().c_str());
  if constexpr (std::is_same_v<T, float>) { // the same through the epilogue store
    Tensor<T, typename E::shape_type> y1 = e + T(0);
    for (index_t i = 0; i < y.size(); ++i) REQUIRE(y1.data()[i] == y.data()[i]);
  }
}

template <class T, bool Nhwc>
void check_grid() {
  [&]<std::size_t... I>(std::index_sequence<I...>) { (check_case<T, Nhwc, grid[I]>(), ...); }(std::make_index_sequence<std::size(grid)>{});
}
} // namespace

TEST_CASE("conv_transpose2d NCHW f32 matches the long-double reference over the grid", "[conv]") { check_grid<float, false>(); }
TEST_CASE("conv_transpose2d NHWC f32 matches the long-double reference over the grid", "[conv]") { check_grid<float, true>(); }
TEST_CASE("conv_transpose2d NCHW f64 matches the long-double reference over the grid", "[conv]") { check_grid<double, false>(); }
TEST_CASE("conv_transpose2d NHWC f64 matches the long-double reference over the grid", "[conv]") { check_grid<double, true>(); }

TEST_CASE("conv_transpose2d: the node's own at() matches the reference", "[conv]") {
  constexpr conv_case P{.n = 2, .c = 4, .h = 5, .w = 6, .oc = 3, .kh = 3, .kw = 5, .sh = 2, .sw = 3, .ph = 1, .pw = 2, .dh = 2, .dw = 1, .groups = 2, .oph = 1, .opw = 2};
  Tensor<float, shape<2, 5, 6, 4>> x; // NHWC
  Tensor<float, shape<3, 5, 3, 4>> w; // [KH, KW, OC/groups, C]
  fill(x, 3), fill(w, 4);
  const auto e = conv_transpose2d(x, w, stride<2, 3>, padding<1, 2>, dilation<2, 1>, output_padding<1, 2>, groups<2>, nhwc);
  const reference r = naive(P, true, true, x.data(), w.data());
  using S = decltype(e)::shape_type;
  Tensor<float, S> y;
  for (index_t i = 0; i < S::size; ++i) {
    index_t idx[4];
    detail::unravel<S>(i, idx);
    y.data()[i] = float(e.at(idx));
  }
  require_close<float>(y, r, "at()");
}

namespace {
Tensor<float, shape<2, 8, 5, 5>> tx;
Tensor<float, shape<8, 4, 4, 4>> tw;
Tensor<float, shape<4, 1, 1>> tb;
} // namespace
static_assert(plan_of<decltype(relu(conv_transpose2d(tx, tw, stride<2>, padding<1>) + tb))>::nests == 1);
static_assert(plan_of<decltype(relu(conv_transpose2d(tx, tw, stride<2>, padding<1>) + tb))>::buffers == 0);

TEST_CASE("conv_transpose2d: bias + relu in the store equals the separate computation", "[conv]") {
  fill(tx, 5), fill(tw, 6), fill(tb, 7);
  Tensor<float, shape<2, 4, 10, 10>> plain = conv_transpose2d(tx, tw, stride<2>, padding<1>);
  Tensor<float, shape<2, 4, 10, 10>> fused = relu(conv_transpose2d(tx, tw, stride<2>, padding<1>) + tb);
  Tensor<float, shape<2, 4, 10, 10>> separate = relu(plain + tb);
  for (index_t i = 0; i < fused.size(); ++i) REQUIRE(fused.data()[i] == separate.data()[i]);
}
