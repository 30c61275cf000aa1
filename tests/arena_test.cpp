// The compile-time arena: planned sizes against the lower bound (max bytes alive at once), values
// equal to the heap path, and clear errors for an arena that is too small or misaligned.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

using namespace tenfold;

namespace {
template <class S>
Tensor<float, S> rand_t(std::uint64_t seed, float scale = 1.0f) {
  rng g(seed);
  return uniform<S>(g, -scale, scale);
}
// 4-layer MLP with layers of different widths, written as one expression.
struct mlp {
  Tensor<float, shape<256, 64>> w1 = rand_t<shape<256, 64>>(1, 0.1f);
  Tensor<float, shape<256>> b1 = rand_t<shape<256>>(2, 0.1f);
  Tensor<float, shape<512, 256>> w2 = rand_t<shape<512, 256>>(3, 0.1f);
  Tensor<float, shape<512>> b2 = rand_t<shape<512>>(4, 0.1f);
  Tensor<float, shape<128, 512>> w3 = rand_t<shape<128, 512>>(5, 0.1f);
  Tensor<float, shape<128>> b3 = rand_t<shape<128>>(6, 0.1f);
  Tensor<float, shape<10, 128>> w4 = rand_t<shape<10, 128>>(7, 0.1f);
  Tensor<float, shape<10>> b4 = rand_t<shape<10>>(8, 0.1f);
  template <class X>
  auto forward(const X& x) const {
    return linear(relu(linear(relu(linear(relu(linear(x, w1, b1)), w2, b2)), w3, b3)), w4, b4);
  }
};
} // namespace

TEST_CASE("arena for a 4-layer MLP: at the lower bound, far below the sum", "[arena]") {
  const mlp m;
  const auto x = rand_t<shape<32, 64>>(9);
  using E = decltype(m.forward(x));
  using P = arena_plan<E>;
  STATIC_REQUIRE(P::buffers == 3); // the three hidden activations
  STATIC_REQUIRE(P::bytes >= P::lower_bound);
  STATIC_REQUIRE(P::bytes * 100 <= P::lower_bound * 102);
  STATIC_REQUIRE(P::bytes < P::total);
  // Hidden 32x256, 32x512, 32x128 floats: at most two are alive at once.
  STATIC_REQUIRE(P::lower_bound == (32 * 256 + 32 * 512) * 4);

  Tensor<float, shape<32, 10>> heap = m.forward(x);
  alignas(64) static std::byte arena[P::bytes];
  Tensor<float, shape<32, 10>> planned;
  eval(planned, m.forward(x), arena);
  CHECK(std::equal(heap.begin(), heap.end(), planned.begin()));
}

TEST_CASE("arena for chains of materialised reductions", "[arena]") {
  const auto x = rand_t<shape<64, 48>>(10);
  // Each centring along axis 0 materialises a [1, 48] mean; the chain keeps at most two alive.
  auto c1 = x - mean(x, axis<0>, keepdims);
  auto c2 = c1 - mean(c1 * c1, axis<0>, keepdims);
  auto c3 = c2 - mean(c2 * c2, axis<0>, keepdims);
  using P = arena_plan<decltype(c3)>;
  STATIC_REQUIRE(P::buffers >= 3);
  STATIC_REQUIRE(P::bytes == P::lower_bound);
  Tensor<float, shape<64, 48>> heap = c3, planned;
  std::vector<std::byte> storage(P::bytes + 64);
  auto* base = reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(storage.data()) + 63) & ~std::uintptr_t(63));
  eval(planned, c3, std::span<std::byte>(base, P::bytes));
  CHECK(std::equal(heap.begin(), heap.end(), planned.begin()));
}

TEST_CASE("a fused expression needs no arena", "[arena]") {
  const auto x = rand_t<shape<8, 16>>(11);
  STATIC_REQUIRE(arena_bytes<decltype(softmax(x))> == 0);
  Tensor<float, shape<8, 16>> y;
  eval(y, softmax(x), std::span<std::byte>{});
  CHECK(y(0, 0) > 0);
}

TEST_CASE("a reshape at the root writes a row-major destination itself", "[arena]") {
  const auto a = rand_t<shape<4, 5>>(12);
  const auto b = rand_t<shape<5, 6>>(13);
  const Tensor<float, shape<4, 6>> m = matmul(a, b);
  // reshape(e) into a Tensor: e's nest (here the GEMM) writes the destination, no buffer and no copy
  using E = decltype(reshape<2, 12>(matmul(a, b)));
  STATIC_REQUIRE(arena_plan<E>::buffers == 0);
  STATIC_REQUIRE(plan_of<E>::nests == 1);
  Tensor<float, shape<2, 12>> y;
  eval(y, reshape<2, 12>(matmul(a, b)), std::span<std::byte>{});
  bool same = true;
  for (index_t i = 0; i < 24; ++i) same = same && y.data()[i] == m.data()[i];
  CHECK(same);
  // into a strided destination (half the columns of a wider tensor) the reshape still goes through a
  // buffer, and the plan for that destination counts it
  Tensor<float, shape<2, 24>> wide = full<float, shape<2, 24>>(-1.0f);
  using Half = decltype(slice<whole, range<0, 12>>(wide));
  STATIC_REQUIRE(eval_arena_bytes<Half, E> > 0);
  STATIC_REQUIRE(eval_arena_bytes<Tensor<float, shape<2, 12>>, E> == 0);
  eval(slice<whole, range<0, 12>>(wide), reshape<2, 12>(matmul(a, b)));
  bool half = true;
  for (index_t r = 0; r < 2; ++r)
    for (index_t c = 0; c < 24; ++c) half = half && wide(r, c) == (c < 12 ? m.data()[r * 12 + c] : -1.0f);
  CHECK(half);
  // let(e, reshape(v)), a value only reshaped (how a pool's gradient merges its windows): e itself is
  // evaluated into the destination
  const auto x = rand_t<shape<4, 6>>(14);
  auto merged = [&x] { return let(permute<1, 0>(exp(x)), [](const auto& v) { return reshape<24>(v); }); };
  STATIC_REQUIRE(arena_plan<decltype(merged())>::buffers == 0);
  Tensor<float, shape<24>> z;
  eval(z, merged(), std::span<std::byte>{});
  bool merged_ok = true;
  for (index_t j = 0; j < 6; ++j)
    for (index_t i = 0; i < 4; ++i) merged_ok = merged_ok && std::fabs(z(j * 4 + i) - std::exp(x(i, j))) <= 1e-6f * std::exp(x(i, j));
  CHECK(merged_ok);
}

TEST_CASE("a wrong arena is a clear error, and nothing is evaluated", "[arena]") {
  const auto x = rand_t<shape<64, 48>>(12);
  auto c = x - mean(x, axis<0>, keepdims);
  using P = arena_plan<decltype(c)>;
  alignas(64) static std::byte arena[P::bytes + 64];
  Tensor<float, shape<64, 48>> out;
  CHECK_THROWS_WITH(eval(out, c, std::span<std::byte>(arena, P::bytes - 1)), Catch::Contains("needs " + std::to_string(P::bytes)));
  CHECK_THROWS_WITH(eval(out, c, std::span<std::byte>(arena + 1, P::bytes)), Catch::Contains("64-byte aligned"));
  for (float v : out) CHECK(v == 0.0f);
}
