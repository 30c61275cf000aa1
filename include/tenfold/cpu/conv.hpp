#pragma once
// Assignments whose root is a conv2d / conv_transpose2d, or elementwise over exactly one of the same
// shape (relu(conv2d(x, w) + b)): the convolution runs on the GEMM (cpu/gemm.hpp) with implicit im2col
// (cpu/conv_pack.hpp), and the root — the conv replaced by the finished block — is evaluated in the store.
//   NHWC: per group, C[N*OH*OW, OCg] = im2col(x)[N*OH*OW, KH*KW*Cg] * W[KH*KW*Cg, OCg]   (im2col is A)
//   NCHW: per image and group, C[OCg, OH*OW] = W[OCg, Cg*KH*KW] * im2col(x)[Cg*KH*KW, OH*OW] (im2col is B)
// A 1x1 convolution with stride 1 and no padding reads x as a plain matrix: no im2col at all.
// An NCHW convolution whose NHWC form reads its windows in place (cpu/conv_padded.hpp) takes that form
// ("turned"): the padded copy of x is written channels-last, C's rows are the batch's positions, and
// each finished block of C is transposed back into rows of channels before the store. The NCHW form
// packs every window (KH*KW copies of x) per image and panel; the transposes are one pass each over x
// and y. (k then runs over (kh, kw, c): other bits than the NCHW form's, the same for any thread count.)
#include "tenfold/cpu/conv_config.hpp"
#include "tenfold/cpu/conv_padded.hpp"
#include "tenfold/cpu/gemm_eval.hpp"
#include "tenfold/tuned/conv_cpu.hpp"

namespace tenfold::cpu {

// The finished block of C standing in for the conv in the epilogue. NHWC: C's rows are output
// positions r = (n, oh, ow) of the whole batch, its columns the group's channels (from `base`).
// NCHW: C's rows are the group's channels (from `base`) of one image, its columns (oh, ow).
template <class T, class S, bool Nhwc>
struct conv_block : node_base {
  static constexpr bool nest_block = true; // plan/nest_node.hpp
  using value_type = T;
  using shape_type = S;
  static constexpr int rank = 4;
  static constexpr index_t OH = Nhwc ? S::dims[1] : S::dims[2], OW = Nhwc ? S::dims[2] : S::dims[3];
  const T* p;
  index_t ldc, i0, j0, base;
  template <class L>
  gemm_block_row<T, L> row(const index_t* idx) const {
    if constexpr (Nhwc) return {p + ((idx[0] * OH + idx[1]) * OW + idx[2] - i0) * ldc, j0 + base};
    else return {p + (idx[1] - base - i0) * ldc, j0 - idx[2] * OW}; // column oh*OW + ow
  }
  T at(const index_t* idx) const { return row<T>(idx).scalar(idx[3]); }
  static std::string str() { return "conv_block"; }
};
template <class T, class S, bool Nhwc>
inline constexpr bool is_gemm_block_v<conv_block<T, S, Nhwc>> = true;

template <class Dst, class N>
void run_elementwise(const Dst& dst, const N& n);

// The epilogue behind a function pointer: gemm_range is then instantiated once per operand kind and
// element type rather than once per convolution (one indirect call per finished block).
template <class T>
struct gemm_erased_out {
  static constexpr bool direct = false;
  struct callback {
    const void* ctx;
    void (*fn)(const void*, const T*, index_t, index_t, index_t, index_t, index_t);
    void operator()(const T* c, index_t ldc, index_t i0, index_t mc, index_t j0, index_t nc) const { fn(ctx, c, ldc, i0, mc, j0, nc); }
  };
  callback epilogue;
  template <class F>
  static gemm_erased_out of(const F& f) {
    return {{&f, [](const void* ctx, const T* c, index_t ldc, index_t i0, index_t mc, index_t j0, index_t nc) {
               (*static_cast<const F*>(ctx))(c, ldc, i0, mc, j0, nc);
             }}};
  }
};

// Whether C can be the destination itself: the bare conv, stored as T, with C's rows evenly strided.
template <class Dst, class N, class Cv, class T>
constexpr bool conv_direct() {
  if constexpr (!std::is_same_v<N, Cv> || !std::is_same_v<std::remove_const_t<typename Dst::element_type>, T>) return false;
  else {
    constexpr auto s = Dst::strides;
    if constexpr (Cv::nhwc) return s[3] == 1 && s[1] == Cv::OW * s[2] && s[0] == Cv::OH * s[1];
    else return s[3] == 1 && s[2] == Cv::OW;
  }
}

// 1x1, stride 1, no padding, and x's spatial positions evenly strided: x itself is the GEMM operand.
template <class Cv>
constexpr bool conv_pointwise() {
  constexpr conv_geometry G = Cv::geometry;
  constexpr conv_dims X = conv_dims_of<Cv>();
  if constexpr (Cv::KH != 1 || Cv::KW != 1 || G.stride_h != 1 || G.stride_w != 1 || G.pad_h != 0 || G.pad_w != 0 ||
                G.out_pad_h != 0 || G.out_pad_w != 0)
    return false;
  else if constexpr (Cv::nhwc) return X.xh == Cv::W * X.xw && X.xn == Cv::H * X.xh;
  else return X.xh == Cv::W * X.xw;
}

// The weights of one group as a GEMM operand: a plain matrix where their k axes are contiguous (so the
// tuned matrix packing applies), else read through conv_weight_ref.
template <class Cv, class EW>
auto weight_operand(const EW* p) {
  static constexpr conv_dims d = conv_dims_of<Cv>();
  if constexpr (!Cv::geometry.transposed && !Cv::nhwc && d.wh == Cv::KW * d.wkw && d.wc == Cv::KH * d.wh)
    return matrix_ref<EW>{p, d.wm, d.wkw}; // (m, (c, kh, kw))
  else if constexpr (!Cv::geometry.transposed && Cv::nhwc && d.wkw == Cv::Cg * d.wc && d.wh == Cv::KW * d.wkw)
    return matrix_ref<EW>{p, d.wc, d.wm}; // ((kh, kw, c), m)
  else return conv_weight_ref<EW>{p, &d};
}

// The geometry with k in NHWC's order (kh, kw, c) over the same strides by role.
template <class Cv>
constexpr conv_dims conv_dims_hwc() {
  conv_dims d = conv_dims_of<Cv>();
  d.nhwc = true;
  return d;
}

// The lowering and blocking for the build's machine: the tuned table's entry, else the defaults
// (cpu/conv_config.hpp). The matmuls' tuned blocking is not used here: its search times matmuls, whose
// A is a plain matrix, while a convolution's A is the im2col read through the windows, the dearer operand
// to pack (the large class's choice on Intel model 167, one part per thread and each thread packing all of
// A, ran c2 at batch 32 at 0.88-0.93x of the defaults: bench/RESULTS.md); tools/tune/conv.hpp times
// convolutions themselves.
constexpr conv_config conv_config_for() {
  for (const conv_tuned_entry& e : tuned::conv_cpu)
    if (e.machine == build_machine) return e.config;
  return {};
}
inline constexpr gemm_config conv_gemm_config = conv_config_for().blocking;

// Whether NCHW convolution Cv is computed in its NHWC form (see the top): where its windows then read in
// place and its channels are whole vectors. (A first layer's 1 -> 32 channels at 28 x 28, 9 taps, has too
// few FLOPs per output for the transposes: 78 -> 29 GFLOP/s turned, one thread on Intel model 167.)
// (Turn: the configuration allows it, cpu/conv_config.hpp.)
template <class T, class Cv, bool Turn = conv_config_for().turn_nchw && conv_config_for().read_in_place>
constexpr bool conv_turned() {
  if constexpr (!Turn || Cv::nhwc || Cv::geometry.transposed || conv_pointwise<Cv>() || Cv::Cg % gemm_tile<T>::W != 0)
    return false;
  else return conv_reads_a_in_place<T, Cv, true>(conv_gemm_config);
}

// InPlace, Turn: the lowerings the configuration allows; cfg: the product's blocking (cpu/conv_config.hpp;
// tools/tune passes others).
template <bool InPlace = conv_config_for().read_in_place, bool Turn = conv_config_for().turn_nchw && InPlace, class Dst, class N>
void run_conv(const Dst& dst, const N& root, const gemm_config& cfg = conv_gemm_config) {
  using Cv = std::remove_cvref_t<decltype(find_matmul(root))>;
  using T = compute_t<typename Cv::value_type>;
  if constexpr (!(std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    run_elementwise(dst, root); // integer convolutions: one sum per element through `at`
  } else {
    using S = typename N::shape_type;
    using EX = std::remove_const_t<typename Cv::x_type::element_type>;
    using EW = std::remove_const_t<typename Cv::w_type::element_type>;
    // hwc: C's rows are positions (NHWC, or NCHW turned); else they are one image's channels.
    constexpr bool nhwc = Cv::nhwc, pointwise = conv_pointwise<Cv>(), turned = conv_turned<T, Cv, Turn && InPlace>(),
                   hwc = nhwc || turned;
    constexpr bool direct = !turned && conv_direct<Dst, N, Cv, T>();
    static constexpr conv_dims dims = turned ? conv_dims_hwc<Cv>() : conv_dims_of<Cv>();
    constexpr index_t OH = Cv::OH, OW = Cv::OW, OCg = Cv::OCg, groups = Cv::groups;
    constexpr index_t M = hwc ? Cv::N * OH * OW : OCg, NC = hwc ? OCg : OH * OW, K = Cv::Cg * Cv::KH * Cv::KW;
    constexpr index_t gemms = hwc ? groups : Cv::N * groups; // independent products
    const Cv& cv = find_matmul(root);
    const EX* xp = detail::get<0>(cv.args).data() + Cv::x_type::offset;
    const EW* wp = detail::get<1>(cv.args).data() + Cv::w_type::offset;

    using Block = conv_block<T, S, nhwc>;
    using Tail = decltype(substitute_block(root, std::declval<Block>()));
    using L0 = typename lane_of<Tail>::type;
    constexpr bool vec = lane_type_v<L0> && simd_ok<Tail, L0>::value;
    using L = std::conditional_t<vec, L0, float>;
    using index_array = std::array<index_t, 5>;
    // Threads as run_gemm splits them: whole products per thread when there are enough, else each is cut.
    // A single product too small to cut over threads is cut along k instead (a weight gradient's).
    constexpr index_t slices = gemms == 1 ? gemm_k_slices<T>(M, NC, K) : 1;
    const gemm_schedule sched = slices > 1 ? gemm_schedule{} : schedule_gemm(M, NC, K, gemms, false, cfg);
    // NHWC windows read in place over a padded copy of the images a part's rows cover (cpu/conv_padded.hpp).
    // (decided with the default kc, a whole number of vectors as conv_reads_a_in_place needs; a kc that is
    // not cannot read in place)
    constexpr bool in_place = InPlace && hwc && !pointwise && slices == 1 && conv_reads_a_in_place<T, Cv, hwc>(conv_gemm_config);
    if (in_place && cfg.kc % gemm_tile<T>::W != 0)
      throw error("tenfold::cpu::run_conv: a convolution read in place needs a kc of whole vectors (cpu/conv_config.hpp)");
    static_assert(!turned || in_place, "an NCHW convolution is turned only where its windows are read in place");
    const index_t parts = sched.parts;
    auto task = [&](index_t t0, index_t t1) {
      for (index_t t = t0; t < t1; ++t) {
        const index_t b = t / parts, g = b % groups, n = hwc ? 0 : b / groups;
        const gemm_part range = gemm_split<T>(M, NC, t % parts, parts, cfg.split);
        // A finished block of C in the layout's orientation (image n's channels for NCHW) through the
        // consumer expression into dst.
        auto store_block = [&](index_t n, const T* c, index_t ldc, index_t i0, index_t mc, index_t j0, index_t nc) {
          const auto tail = substitute_block(root, Block{{}, c, ldc, i0, j0, g * OCg});
          auto run = [&](const index_array& i, index_t lo, index_t hi) {
            const auto d = make_row<3, L>(dst, i.data());
            const auto s = make_row<3, L>(tail, i.data());
            if constexpr (vec) store_run<typename Dst::element_type, L, run_stride<Dst, 3>(), typename N::value_type>(d, s, lo, hi);
            else store_run_scalar(d, s, lo, hi);
          };
          for (index_t r = i0; r < i0 + mc; ++r) {
            if constexpr (nhwc) {
              run({r / (OH * OW), r % (OH * OW) / OW, r % OW, 0, 0}, g * OCg + j0, g * OCg + j0 + nc);
            } else {
              for (index_t j = j0; j < j0 + nc;) { // the columns of one output row at a time
                const index_t oh = j / OW, ow = j % OW, stop = std::min(OW, ow + (j0 + nc - j));
                run({n, g * OCg + r, oh, 0, 0}, ow, stop);
                j += stop - ow;
              }
            }
          }
        };
        auto store = [&](const T* c, index_t ldc, index_t i0, index_t mc, index_t j0, index_t nc) {
          if constexpr (turned) { // positions x channels -> channels x positions, one image at a time
            // The bare conv into planes of contiguous rows: transposed straight into them.
            constexpr auto ds = Dst::strides;
            constexpr bool planes = conv_direct<Dst, N, Cv, T>() && ds[2] == OW;
            T* ct = planes ? nullptr : conv_workspace<T>::local().turned.get(nc * mc);
            for (index_t r = i0; r < i0 + mc;) {
              const index_t image = r / (OH * OW), p0 = r % (OH * OW), count = std::min(OH * OW - p0, i0 + mc - r);
              const T* cr = c + (r - i0) * ldc;
              if constexpr (planes) {
                T* out = dst.data() + Dst::offset + image * ds[0] + (g * OCg + j0) * ds[1] + p0;
                transpose_copy(cr, ldc, count, nc, [&](index_t j) { return out + j * ds[1]; });
              } else {
                transpose_copy(cr, ldc, count, nc, [&](index_t j) { return ct + j * count; });
                store_block(image, ct, count, j0, nc, p0, count);
              }
              r += count;
            }
          } else store_block(n, c, ldc, i0, mc, j0, nc);
        };
        // Group g's first input channel in x and its first element in w.
        const index_t x_group = g * Cv::Cg * dims.xc, w_group = g * (Cv::geometry.transposed ? Cv::Cg * dims.wc : OCg * dims.wm);
        const auto w = [&] {
          if constexpr (turned) return conv_weight_ref<EW>{wp + w_group, &dims};
          else return weight_operand<Cv>(wp + w_group);
        }();
        auto product = [&](const auto& a, const auto& bm) {
          auto run = [&](const auto& out) {
            if constexpr (slices > 1) gemm_k_sliced<T>(a, bm, M, NC, K, slices, out, cfg);
            else gemm_range<T>(a, bm, M, K, range, out, cfg);
          };
          if constexpr (direct) {
            constexpr auto ds = Dst::strides;
            T* c = dst.data() + Dst::offset + (nhwc ? g * OCg * ds[3] : n * ds[0] + g * OCg * ds[1]);
            run(gemm_direct_out<T>{c, nhwc ? ds[2] : ds[1]});
          } else {
            run(gemm_erased_out<T>::of(store));
          }
        };
        if constexpr (hwc) {
          const EX* xg = xp + x_group;
          if constexpr (pointwise) product(matrix_ref<EX>{xg, dims.xw, dims.xc}, w);
          else if constexpr (in_place) {
            if (range.r0 < range.r1)
              product(pad_images<T, conv_a_lda<Cv>, conv_a_group<T, Cv>>(xg, dims, range.r0 / (OH * OW), (range.r1 - 1) / (OH * OW) + 1), w);
          } else product(im2col_rows_ref<EX>{xg, &dims}, w);
        } else {
          const EX* xg = xp + n * dims.xn + x_group;
          if constexpr (pointwise) product(w, matrix_ref<EX>{xg, dims.xc, dims.xw});
          else product(w, im2col_cols_ref<EX>{xg, &dims});
        }
      }
    };
    run_gemm_tasks(sched, gemms, task);
  }
}
} // namespace tenfold::cpu
