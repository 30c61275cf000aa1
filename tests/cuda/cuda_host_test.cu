// Host-side logic of the CUDA backend, tested where there is no device: error reporting, launch
// shapes, the kernel-name encoding, the arena slots, aliasing and the compile-time plan of each root.
#include "cuda_test_support.hpp"

#include <string>

using namespace tenfold;
namespace cd = tenfold::cuda::detail;

namespace {
// (Leaves are made by leaf_at, not braced in place: nvcc 13's front end crashes on a braced node
// aggregate with an empty base in host code, "gen_initializer_constant: ran out of fields".)
// Trait queries through deduction: a local alias of a composite's type would be spelled out by nvcc's
// host-code generator, which cannot spell every part of it (ops/rewrite.hpp's mask holders).
template <class E>
constexpr int slots_of(const E&) {
  using N = detail::node_t<E>;
  return tenfold::cuda::detail::slot_count<N, 1u << (N::rank - 1)>();
}
template <class Dst, class E>
constexpr bool vector_rows_of(const E&) {
  return tenfold::cuda::detail::vector_rows_eligible<Dst, detail::node_t<E>>();
}
template <class E>
constexpr bool rows_of(const E&) {
  return tenfold::cuda::detail::needs_rows<detail::node_t<E>>();
}
template <class E>
constexpr tenfold::cuda::detail::dot_shape dot_of(const E&) {
  return tenfold::cuda::detail::dot_launch<detail::node_t<E>>();
}
using dot = tenfold::cuda::detail::dot_shape;
template <class E>
constexpr bool few_long_of(const E&) {
  return tenfold::cuda::detail::few_long_outputs_v<detail::node_t<E>>;
}
// An innermost reduction short enough for a thread per output.
template <class E>
constexpr bool short_rows_of(const E&) {
  using N = detail::node_t<E>;
  if constexpr (detail::is_reduce_node_v<N>) return plan::direct_fused_v<N> && N::count <= tenfold::cuda::detail::short_row_limit;
  else return false;
}
// A device address that is never dereferenced here: only host-side logic runs in this file.
template <class T = float>
T* fake(std::uintptr_t a) {
  return reinterpret_cast<T*>(a);
}
} // namespace

TEST_CASE("a failing runtime call throws tenfold::error naming the call and the reason") {
  const std::string m = cuda::error_message("cudaMalloc(&p, n)", cudaErrorMemoryAllocation);
  CHECK(m == std::string("tenfold::cuda: cudaMalloc(&p, n) failed: ") + cudaGetErrorString(cudaErrorMemoryAllocation) +
                 " (cudaErrorMemoryAllocation)");
  // A device that exists nowhere: fails on every machine, with or without a GPU.
  try {
    TENFOLD_CUDA_CHECK(cudaSetDevice(9999));
    FAIL("cudaSetDevice(9999) succeeded");
  } catch (const error& e) {
    const std::string what = e.what();
    CHECK(what.find("cudaSetDevice(9999) failed: ") != std::string::npos);
    CHECK(what.find("(cudaError") != std::string::npos);
  }
  // An absurd allocation, through the RAII buffer.
  try {
    cuda::device_buffer b(std::size_t(1) << 62);
    FAIL("a 4 EiB cudaMalloc succeeded");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("cudaMalloc(&ptr_, bytes) failed") != std::string::npos);
  }
  CHECK_NOTHROW(cuda::check(cudaSuccess, "nothing"));
  CHECK_NOTHROW(cuda::device_available()); // answers, never throws
}

TEST_CASE("launch shapes follow from the static shape") {
  static_assert(cuda::vector_width(4) == 4 && cuda::vector_width(2) == 8 && cuda::vector_width(8) == 2 && cuda::vector_width(1) == 16);
  constexpr auto small = cuda::elementwise_launch(1000, 4);
  CHECK(small.grid == 1); // 250 vectors fit one block of 256
  CHECK(small.block == 256);
  constexpr auto big = cuda::elementwise_launch(index_t(1) << 28, 4);
  CHECK(big.grid == cuda::max_grid); // capped: the grid-stride loop covers the rest
  constexpr auto odd = cuda::elementwise_launch(257 * 4 + 1, 4);
  CHECK(odd.grid == 2);
  // Rows up to 1024 long: a warp each, 8 per block; longer: a block each, growing with the row.
  constexpr auto rows = cuda::row_launch(4096, 1000);
  CHECK((rows.per_block == 8 && rows.block == 256 && rows.grid == 512));
  constexpr auto wide = cuda::row_launch(64, 4096);
  CHECK((wide.per_block == 1 && wide.block == 512 && wide.grid == 64));
  constexpr auto huge = cuda::row_launch(2, 1 << 20);
  CHECK(huge.block == 1024);
  constexpr auto short_wide = cuda::row_launch(3, 1025);
  CHECK(short_wide.block == 256); // 1025 / 8 rounded up to a power of two
  // The vector path: up to 8 chunks of 16 bytes per thread, a warp up to 1024 floats, then a block.
  constexpr auto v128 = cuda::vector_row_launch(65536, 128, 4);
  CHECK((v128.per_block == 8 && cuda::row_group(v128) == 32 && cuda::row_chunks(v128, 128) == 1));
  constexpr auto v1024 = cuda::vector_row_launch(4096, 1024, 4);
  CHECK((cuda::row_group(v1024) == 32 && cuda::row_chunks(v1024, 1024) == 8 && v1024.grid == 512));
  constexpr auto v4096 = cuda::vector_row_launch(8192, 4096, 4);
  CHECK((v4096.per_block == 1 && v4096.block == 128 && cuda::row_chunks(v4096, 4096) == 8 && v4096.grid == 8192));
  constexpr auto v5000 = cuda::vector_row_launch(9, 5000, 4);
  CHECK((v5000.block == 256 && cuda::row_chunks(v5000, 5000) == 5)); // 1250 chunks: the last partly used
  constexpr auto v32k = cuda::vector_row_launch(1024, 32768, 4);
  CHECK((v32k.block == 1024 && cuda::row_chunks(v32k, 32768) == 8));
  CHECK(cuda::vector_row_launch(16, 65536, 4).grid == 0); // too long for registers: the generic kernel
}

TEST_CASE("flat trees, vector widths and row fusion are decided from the types") {
  using S = shape<33, 65>;
  const auto x = cuda::leaf_at<const float, S>(fake(256));
  const auto y = cuda::leaf_at<const float, S>(fake(512));
  using flat = decltype(detail::as_node(exp(x) * y + 1.0f));
  static_assert(cd::flat_tree<flat, S>());
  static_assert(cd::widest_load<flat>() == 4);
  using transposed = decltype(detail::as_node(transpose(reshape<65, 33>(x)) + y));
  static_assert(!cd::flat_tree<transposed, S>()); // a view: indexed kernel
  using bias = decltype(detail::as_node(x + cuda::leaf_at<const double, shape<65>>(fake<const double>(64))));
  static_assert(!cd::flat_tree<bias, S>()); // broadcast along rows only: indexed
  CHECK(cd::leaves_aligned<4>(x));
  CHECK_FALSE(cd::leaves_aligned<4>(cuda::leaf_at<const float, S>(fake(260))));

  // Each row reduction of the tree is one slot, reduced once per row in registers: one for softmax and
  // log_softmax as ops/rewrite.hpp writes them (x - logsumexp(x)), up to three for the plain trees
  // (max, and the sum over exp(x - max) with its own copy of max).
  CHECK(rows_of(softmax(x)));
  CHECK((slots_of(softmax(x)) >= 1 && slots_of(softmax(x)) <= 3));
  CHECK((slots_of(log_softmax(x)) >= 1 && slots_of(log_softmax(x)) <= 3));
  const auto g = cuda::leaf_at<const float, shape<65>>(fake(64));
  CHECK((slots_of(layer_norm(x, g, g)) >= 2 && slots_of(layer_norm(x, g, g)) <= 3)); // mean, (mean,) mean of squares
  CHECK(slots_of(rms_norm(x, g)) == 1);
  static_assert(!cd::needs_rows<flat>());
  // A reduction over the leading axis is constant along rows of nothing: not a slot.
  using col = decltype(detail::as_node(x - sum(x, axis<0>, keepdims)));
  static_assert(!cd::needs_rows<col>());

  // The vector row path takes trees whose leaves run along the row (stride 1) or stay (stride 0).
  using D = cuda::device_leaf<float, S>;
  using D64 = cuda::device_leaf<float, shape<33, 64>>;
  const auto x64 = cuda::leaf_at<const float, shape<33, 64>>(fake(256));
  const auto g64 = cuda::leaf_at<const float, shape<64>>(fake(64));
  CHECK_FALSE(vector_rows_of<D>(softmax(x))); // 65 columns: not whole chunks of 4
  CHECK(vector_rows_of<D64>(softmax(x64)));
  CHECK(vector_rows_of<D64>(layer_norm(x64, g64, g64)));
  CHECK(vector_rows_of<D64>(softmax(x64 * cuda::leaf_at<const float, shape<33, 1>>(fake(64))))); // constant along rows
  CHECK_FALSE(vector_rows_of<D64>(softmax(transpose(reshape<64, 33>(x64))))); // innermost stride 33
  CHECK_FALSE(vector_rows_of<D64>(softmax(flip<1>(x64))));                     // innermost stride -1
  CHECK(cd::row_leaves_aligned<4>(detail::as_node(layer_norm(x64, g64, g64))));
  CHECK_FALSE(cd::row_leaves_aligned<4>(detail::as_node(layer_norm(x64, cuda::leaf_at<const float, shape<64>>(fake(68)), g64))));
  SUCCEED();
}

TEST_CASE("GEMM roots pick tensor cores for 16-bit floats and tile the output") {
  const auto a = cuda::leaf_at<const bf16, shape<3, 100, 64>>(fake<const bf16>(256));
  const auto b = cuda::leaf_at<const bf16, shape<64, 130>>(fake<const bf16>(4096));
  const auto bias = cuda::leaf_at<const float, shape<130>>(fake(8192));
  using gemm = decltype(detail::as_node(relu(matmul(a, b) + bias)));
  static_assert(plan::gemm_root_v<gemm>);
  static_assert(cd::uses_tensor_cores_v<gemm>);
  constexpr dim3 grid = cd::gemm_grid<gemm>();
  CHECK((grid.x == 2 && grid.y == 1 && grid.z == 3)); // 130 / 128 -> 2 column tiles, 3 batches
  static_assert(cd::vector_rows_v<cd::gemm_of_t<gemm>::a_type>);
  const auto af = cuda::leaf_at<const float, shape<100, 64>>(fake(256));
  const auto wf = cuda::leaf_at<const float, shape<130, 64>>(fake(256));
  using simt = decltype(detail::as_node(matmul(af, transpose(wf))));
  static_assert(!cd::uses_tensor_cores_v<simt>);
  constexpr dim3 g2 = cd::gemm_grid<simt>();
  CHECK((g2.x == 2 && g2.y == 1 && g2.z == 1)); // 128 x 128 tiles: 130 -> 2 column tiles, 100 -> 1 row tile
}

TEST_CASE("few outputs over long sums take a block per run of outputs") {
  // The CNN's weight gradients as convolutions (autodiff/conv_adjoint.hpp): the batch is the channels.
  const auto x1 = cuda::leaf_at<const float, shape<1, 28, 28, 64>>(fake(256));
  const auto g1 = cuda::leaf_at<const float, shape<28, 28, 64, 16>>(fake(256));
  CHECK(dot_of(conv2d(x1, g1, padding<1>, nhwc)) == dot{1024, 1}); // [1, 3, 3, 16]: 144 outputs of 50176 terms, a block each
  const auto x2 = cuda::leaf_at<const float, shape<16, 14, 14, 64>>(fake(256));
  const auto g2 = cuda::leaf_at<const float, shape<14, 14, 64, 32>>(fake(256));
  CHECK(dot_of(conv2d(x2, g2, padding<1>, nhwc)) == dot{1024, 32}); // [16, 3, 3, 32]: 144 runs of 32 output channels
  // The forward convolution: 401408 outputs of 144 terms, a thread each.
  const auto x3 = cuda::leaf_at<const float, shape<64, 14, 14, 16>>(fake(256));
  const auto w3 = cuda::leaf_at<const float, shape<3, 3, 16, 32>>(fake(256));
  CHECK(dot_of(relu(conv2d(x3, w3, padding<1>, nhwc))) == dot{});
  // Matmuls: one 128 x 128 tile over K = 1568 -> runs of 32 outputs, 32 slices each; K = 128 into 10 columns;
  // many outputs, enough tiles or a short K -> the tiled kernel.
  const auto a = cuda::leaf_at<const float, shape<64, 1568>>(fake(256));
  const auto w = cuda::leaf_at<const float, shape<1568, 128>>(fake(256));
  const auto bias = cuda::leaf_at<const float, shape<128>>(fake(256));
  CHECK(dot_of(relu(matmul(a, w) + bias)) == dot{1024, 32});
  const auto h = cuda::leaf_at<const float, shape<64, 128>>(fake(256));
  CHECK(dot_of(matmul(h, cuda::leaf_at<const float, shape<128, 10>>(fake(256)))) == dot{32, 8}); // runs of 8: 128 blocks
  CHECK(dot_of(matmul(transpose(h), cuda::leaf_at<const float, shape<64, 10>>(fake(256)))) == dot{32, 16}); // K = 64
  CHECK(dot_of(matmul(h, cuda::leaf_at<const float, shape<128, 1024>>(fake(256)))) == dot{}); // 65536 outputs: tiled
  CHECK(dot_of(matmul(cuda::leaf_at<const float, shape<64, 16>>(fake(256)), cuda::leaf_at<const float, shape<16, 10>>(fake(256)))) == dot{}); // K = 16
  CHECK(dot_of(matmul(cuda::leaf_at<const float, shape<1568, 64>>(fake(256)), h)) == dot{});   // K = 64
  CHECK(dot_of(matmul(cuda::leaf_at<const float, shape<8192, 1568>>(fake(256)), w)) == dot{}); // 64 tiles
  // A bf16 matmul stays on the tensor cores.
  const auto ab = cuda::leaf_at<const bf16, shape<64, 1568>>(fake<const bf16>(256));
  const auto wb = cuda::leaf_at<const bf16, shape<1568, 128>>(fake<const bf16>(256));
  CHECK(dot_of(matmul(ab, wb)) == dot{});
  // Reductions: a bias gradient (10 outputs of 64 rows) takes a group per output; a 2 x 2 pool's
  // innermost windows of 4 take a thread per output.
  const auto logits = cuda::leaf_at<const float, shape<64, 10>>(fake(256));
  CHECK(few_long_of(sum(softmax(logits), axis<0>)));
  const auto r = cuda::leaf_at<const float, shape<64, 28, 28, 16>>(fake(256));
  CHECK(short_rows_of(max_pool2d<2>(r, nhwc)));
  CHECK(short_rows_of(sum(r, axis<-1>))); // rows of 16 channels
  CHECK_FALSE(short_rows_of(sum(cuda::leaf_at<const float, shape<64, 17>>(fake(256)), axis<-1>)));
}

TEST_CASE("kernel names encode every node type and decode back to it") {
  using S = shape<7, 9>;
  const auto x = cuda::leaf_at<const float, S>(fake(256));
  auto check = [](auto n) {
    using N = decltype(n);
    using Args = cd::kernel_args<cuda::device_leaf<float, typename N::shape_type>, N>;
    static_assert(std::is_same_v<cd::decode_t<cd::key_t<Args>>, Args>);
  };
  check(detail::as_node(softmax(x)));
  check(detail::as_node(cumsum(flip<1>(x), axis<1>)));
  check(detail::as_node(pad<1, 2, 0, 0>(x)));
  check(detail::as_node(concat<0>(x, x)));
  check(detail::as_node(argmax(transpose(x), axis<0>)));
  SUCCEED();
}

TEST_CASE("materialised values take the arena's slots at the planned offsets") {
  using S = shape<16, 32>;
  const auto x = cuda::leaf_at<const float, S>(fake(1 << 20));
  const auto w = cuda::leaf_at<const float, shape<32, 8>>(fake(1 << 21));
  auto e = exp(matmul(x - sum(x, axis<0>, keepdims), w)) + 1.0f; // a buffered reduction feeds a GEMM
  using P = arena_plan<decltype(e)>;
  static_assert(P::buffers >= 1);
  auto* base = fake<std::byte>(1 << 24);
  cuda::arena_slots slots{{}, base, P::offsets.data(), P::buffers};
  for (int b = 0; b < P::buffers; ++b) {
    auto l = slots.template take<float, S>();
    CHECK(reinterpret_cast<std::byte*>(l.data()) == base + P::offsets[b]);
    CHECK(P::offsets[b] % plan::arena_alignment == 0);
  }
  CHECK_THROWS_WITH((slots.take<float, S>()), Catch::Contains("more buffers taken than the arena plan holds"));

  // An arena too small is refused before anything runs (so this needs no device).
  cuda::arena none;
  auto out = cuda::leaf_at<float, shape<16, 8>>(fake(1 << 22));
  CHECK_THROWS_WITH(cuda::eval(out, e, none), Catch::Contains("the arena has 0 bytes; this expression needs " + std::to_string(P::bytes)));
}

TEST_CASE("a destination read through another index map is detected") {
  auto out = cuda::leaf_at<float, shape<8, 8>>(fake(4096));
  const auto same = cuda::leaf_at<const float, shape<8, 8>>(fake(4096));
  const auto other = cuda::leaf_at<const float, shape<8, 8>>(fake(8192));
  CHECK_FALSE(plan::aliases(out, detail::as_node(same + other))); // elementwise in place: safe
  CHECK(plan::aliases(out, detail::as_node(transpose(same) + other)));
  CHECK(plan::aliases(out, detail::as_node(same - max(same, axis<1>, keepdims)))); // read by a reduction
  CHECK_FALSE(plan::aliases(out, detail::as_node(other * 2.0f)));
  // The destination bound by a let and read through a view: seen on the prepared tree (the CPU's
  // copy of this check once missed it). No buffer is taken, so nothing runs on a device.
  cuda::arena_slots none{{}, nullptr, nullptr, 0};
  CHECK(plan::aliases(out, plan::prepare_root(detail::as_node(let(same, [](const auto& p) { return transpose(p); })), none)));
  CHECK_FALSE(plan::aliases(out, plan::prepare_root(detail::as_node(let(same, [](const auto& p) { return p * 2.0f; })), none)));
}

TEST_CASE("without a device, a launch fails with an error naming the kernel") {
  if (cuda::device_available()) return; // (on a GPU these fake pointers would be launched for real)
  const auto x = cuda::leaf_at<const float, shape<100, 100>>(fake(1 << 20));
  auto out = cuda::leaf_at<float, shape<100, 100>>(fake(1 << 22));
  // Nothing to materialise, so no arena is allocated: the first runtime call is the launch itself.
  CHECK_THROWS_WITH(cuda::eval(out, exp(x) * 2.0f), Catch::Contains("tenfold::cuda flat elementwise kernel failed: "));
  CHECK_THROWS_WITH(cuda::eval(out, softmax(x)), Catch::Contains("tenfold::cuda vector row kernel failed: "));
  const auto odd = cuda::leaf_at<const float, shape<100, 101>>(fake(1 << 20)); // rows not in chunks of 4
  auto odd_out = cuda::leaf_at<float, shape<100, 101>>(fake(1 << 22));
  CHECK_THROWS_WITH(cuda::eval(odd_out, softmax(odd)), Catch::Contains("tenfold::cuda row kernel failed: "));
}
