// attention(q, k, v) on the device against the CPU evaluator (whose attention the CPU tests check against
// the materialised formula in long double): the flash kernel (cuda/attention.hpp) with and without the
// causal mask (bottom-right aligned, Sq < Sk and Sq > Sk), first_keys, broadcast batch axes, a value
// width other than the head's, a strided (permuted) operand, rank 2, a query tile boundary, an epilogue
// (the attention materialised, then read), four threads per row and (32768 rows or more) one, and a head
// too wide for the register kernel (a thread per output). key_lengths with the lengths in device memory
// against the CPU's; host lengths on the device are a clear error.
#include "cuda_test_support.hpp"

#include <tenfold/autodiff/backward.hpp>

using namespace tenfold;

using test::check_close;

namespace {
// Sums of D products and of Sk weighted values, in another order than the CPU's tiles, and exp at
// another rounding: a few float roundings apart, compared at the scale 1e-2.
constexpr double att_tol = 2e-5, att_scale = 1e-2;

template <class SQ, class SK, class SV, class SO, class Make, class MakeDev>
void check_attention(Make make, MakeDev make_dev, const char* what, unsigned seed) {
  const auto q = test::random_tensor<float, SQ>(-1, 1, seed);
  const auto k = test::random_tensor<float, SK>(-1, 1, seed + 1);
  const auto v = test::random_tensor<float, SV>(-1, 1, seed + 2);
  const Tensor<float, SO> cpu = make(q, k, v);
  const auto dq = cuda::to_device(q);
  const auto dk = cuda::to_device(k);
  const auto dv = cuda::to_device(v);
  cuda::Tensor<float, SO> out;
  out = make_dev(dq.expr(), dk.expr(), dv.expr());
  check_close(cpu, cuda::to_host(out), att_tol, what, att_scale);
}
// attention(q, k, v, key_lengths) for 3 batch elements of 2 heads, lengths 1, 33 (a tile and one) and Sk
// (every key), with the lengths in device memory against the CPU's; host lengths on the device are an error.
template <index_t Sq, index_t Sk, index_t D, index_t Dv>
void check_key_lengths(unsigned seed, const char* what) {
  const auto q = test::random_tensor<float, shape<3, 2, Sq, D>>(-1, 1, seed);
  const auto k = test::random_tensor<float, shape<3, 2, Sk, D>>(-1, 1, seed + 1);
  const auto v = test::random_tensor<float, shape<3, 2, Sk, Dv>>(-1, 1, seed + 2);
  Tensor<std::int32_t, shape<3>> lens;
  lens(0) = 1, lens(1) = 33, lens(2) = std::int32_t(Sk);
  const Tensor<float, shape<3, 2, Sq, Dv>> cpu = attention(q, k, v, key_lengths(lens));
  const auto dq = cuda::to_device(q);
  const auto dk = cuda::to_device(k);
  const auto dv = cuda::to_device(v);
  const auto dlens = cuda::to_device(lens);
  cuda::Tensor<float, shape<3, 2, Sq, Dv>> out;
  out = attention(dq.expr(), dk.expr(), dv.expr(), cuda::key_lengths(dlens));
  check_close(cpu, cuda::to_host(out), att_tol, what, att_scale);
  CHECK_THROWS_WITH(out = attention(dq.expr(), dk.expr(), dv.expr(), key_lengths(lens)), Catch::Contains("key_lengths in host memory"));
}
} // namespace

TEST_CASE("attention on the device matches the CPU", "[attention]") {
  TENFOLD_REQUIRE_DEVICE();
  const auto plain = [](const auto& q, const auto& k, const auto& v) { return attention(q, k, v); };
  const auto masked = [](const auto& q, const auto& k, const auto& v) { return attention(q, k, v, causal); };
  SECTION("batch 2 x 3 heads, 37 queries over 45 keys, D 16, Dv 24") {
    check_attention<shape<2, 3, 37, 16>, shape<2, 3, 45, 16>, shape<2, 3, 45, 24>, shape<2, 3, 37, 24>>(plain, plain, "plain", 11);
  }
  SECTION("causal with more queries than keys: the first rows see none and give 0") {
    check_attention<shape<2, 40, 8>, shape<2, 29, 8>, shape<2, 29, 8>, shape<2, 40, 8>>(masked, masked, "causal, Sq > Sk", 13);
  }
  SECTION("causal, two query tiles (Sq 150 < Sk 200), D 64; and rank 2") {
    check_attention<shape<2, 150, 64>, shape<2, 200, 64>, shape<2, 200, 64>, shape<2, 150, 64>>(masked, masked, "causal, two tiles", 14);
    check_attention<shape<130, 32>, shape<70, 32>, shape<70, 32>, shape<130, 32>>(plain, plain, "rank 2", 15);
  }
  SECTION("broadcast batch axes (one k and v for 4 heads), scale given") {
    const auto f = [](const auto& q, const auto& k, const auto& v) { return attention(q, k, v, 0.3); };
    check_attention<shape<2, 4, 20, 32>, shape<2, 1, 20, 32>, shape<2, 1, 20, 32>, shape<2, 4, 20, 32>>(f, f, "broadcast", 16);
  }
  SECTION("first_keys: a KV cache of 64 positions, 17 filled, one query and a prompt of 5") {
    const auto one = [](const auto& q, const auto& k, const auto& v) { return attention(q, k, v, causal, first_keys(17)); };
    check_attention<shape<3, 1, 32>, shape<3, 64, 32>, shape<3, 64, 32>, shape<3, 1, 32>>(one, one, "decode step", 17);
    check_attention<shape<3, 5, 32>, shape<3, 64, 32>, shape<3, 64, 32>, shape<3, 5, 32>>(one, one, "prefill", 18);
    const auto none = [](const auto& q, const auto& k, const auto& v) { return attention(q, k, v, first_keys(0)); };
    check_attention<shape<3, 5, 32>, shape<3, 64, 32>, shape<3, 64, 32>, shape<3, 5, 32>>(none, none, "no key: 0", 19);
  }
  SECTION("a permuted operand, and an epilogue over the attention") {
    // k stored [B, D, Sk]: its permuted view has stride Sk along D.
    const auto pk = [](const auto& q, const auto& k, const auto& v) { return attention(q, permute<0, 2, 1>(k), v) * 2.0f + 1.0f; };
    check_attention<shape<2, 33, 16>, shape<2, 16, 50>, shape<2, 50, 16>, shape<2, 33, 16>>(pk, pk, "permuted k, epilogue", 20);
  }
  SECTION("32768 rows or more: a thread per row (attention_splits 1), the rows of Sq > Sk that see no key") {
    check_attention<shape<64, 520, 16>, shape<64, 40, 16>, shape<64, 40, 16>, shape<64, 520, 16>>(masked, masked, "one thread per row", 22);
    check_attention<shape<256, 128, 128>, shape<256, 16, 128>, shape<256, 16, 128>, shape<256, 128, 128>>(plain, plain, "one thread per row, D 128", 23);
  }
  SECTION("a head wider than the register kernel takes: a thread per output") {
    check_attention<shape<1, 9, 160>, shape<1, 12, 160>, shape<1, 12, 8>, shape<1, 9, 8>>(masked, masked, "D 160", 21);
  }
}

// The tiled kernel (cuda/attention_tiled.hpp: f32 heads of at most 64, Dv a multiple of 32, 256 keys or
// more): query tiles of 64 with a tail, key tiles of 32 with a tail, the masks, broadcast and strided
// operands, and key lengths in device memory (one key, a tile and one, all).
TEST_CASE("the tiled attention kernel matches the CPU", "[attention]") {
  TENFOLD_REQUIRE_DEVICE();
  static_assert(tenfold::cuda::detail::tiled_min_keys <= 256, "these cases are meant for the tiled kernel");
  const auto plain = [](const auto& q, const auto& k, const auto& v) { return attention(q, k, v); };
  const auto masked = [](const auto& q, const auto& k, const auto& v) { return attention(q, k, v, causal); };
  SECTION("plain, 100 queries over 300 keys, D 64, Dv 32; causal with Sq > Sk, D 16, Dv 64") {
    check_attention<shape<2, 3, 100, 64>, shape<2, 3, 300, 64>, shape<2, 3, 300, 32>, shape<2, 3, 100, 32>>(plain, plain, "tiled", 24);
    check_attention<shape<2, 300, 16>, shape<2, 260, 16>, shape<2, 260, 64>, shape<2, 300, 64>>(masked, masked, "tiled causal", 25);
  }
  SECTION("first_keys with causal, broadcast k and v, and a permuted k with an epilogue") {
    const auto first = [](const auto& q, const auto& k, const auto& v) { return attention(q, k, v, causal, first_keys(200)); };
    check_attention<shape<3, 70, 32>, shape<3, 256, 32>, shape<3, 256, 32>, shape<3, 70, 32>>(first, first, "tiled first_keys", 26);
    check_attention<shape<2, 4, 65, 32>, shape<2, 1, 256, 32>, shape<2, 1, 256, 32>, shape<2, 4, 65, 32>>(plain, plain, "tiled broadcast", 27);
    const auto pk = [](const auto& q, const auto& k, const auto& v) { return attention(q, permute<0, 2, 1>(k), v) * 2.0f + 1.0f; };
    check_attention<shape<2, 33, 16>, shape<2, 16, 280>, shape<2, 280, 32>, shape<2, 33, 32>>(pk, pk, "tiled permuted k", 28);
  }
  SECTION("key_lengths in device memory") { check_key_lengths<70, 300, 8, 32>(33, "tiled key_lengths"); }
}

TEST_CASE("attention with key_lengths on the device: lengths in device memory match the CPU, host ones are an error",
          "[attention]") {
  TENFOLD_REQUIRE_DEVICE();
  check_key_lengths<5, 40, 8, 8>(30, "key_lengths");
}

// The gradients of q, k and v through value_and_grad with device tensors: the backward kernels
// (cuda/attention_backward.hpp: the stats, dq by query rows, dk and dv by key rows) against the CPU's.
template <bool Causal, index_t B, index_t Sq, index_t Sk, index_t D, index_t Dv>
void check_attention_gradients(unsigned seed) {
  const auto q = test::random_tensor<float, shape<B, Sq, D>>(-1, 1, seed);
  const auto k = test::random_tensor<float, shape<B, Sk, D>>(-1, 1, seed + 1);
  const auto v = test::random_tensor<float, shape<B, Sk, Dv>>(-1, 1, seed + 2);
  const auto r = test::random_tensor<float, shape<B, Sq, Dv>>(-1, 1, seed + 3);
  const auto f = [](const auto& r_) {
    return [&r_](const auto& q_, const auto& k_, const auto& v_) {
      if constexpr (Causal) return sum(attention(q_, k_, v_, causal) * r_);
      else return sum(attention(q_, k_, v_) * r_);
    };
  };
  auto [l, gq, gk, gv] = value_and_grad(f(r), q, k, v);
  const auto dr = cuda::to_device(r);
  const auto dq = cuda::to_device(q);
  const auto dk = cuda::to_device(k);
  const auto dv = cuda::to_device(v);
  const auto dre = dr.expr();
  auto [dev_l, dev_gq, dev_gk, dev_gv] = value_and_grad(f(dre), dq, dk, dv);
  cuda::Tensor<float> loss;
  cuda::Tensor<float, shape<B, Sq, D>> oq;
  cuda::Tensor<float, shape<B, Sk, D>> ok;
  cuda::Tensor<float, shape<B, Sk, Dv>> ov;
  loss = dev_l, oq = dev_gq, ok = dev_gk, ov = dev_gv;
  check_close(Tensor<float>(l), cuda::to_host(loss), 1e-4, "loss", 1.0);
  check_close(Tensor<float, shape<B, Sq, D>>(gq), cuda::to_host(oq), 1e-4, "d q", 1e-1);
  check_close(Tensor<float, shape<B, Sk, D>>(gk), cuda::to_host(ok), 1e-4, "d k", 1e-1);
  check_close(Tensor<float, shape<B, Sk, Dv>>(gv), cuda::to_host(ov), 1e-4, "d v", 1e-1);
}

TEST_CASE("attention's gradients on the device match the CPU", "[attention][grad]") {
  TENFOLD_REQUIRE_DEVICE();
  SECTION("plain, 3 x 37 queries over 45 keys, D 16, Dv 24") { check_attention_gradients<false, 3, 37, 45, 16, 24>(41); }
  // Two tiles of query rows and of key rows, offset by Sk - Sq = 50: the second key tile's first query is 78.
  SECTION("causal, Sq 150 < Sk 200") { check_attention_gradients<true, 2, 150, 200, 16, 24>(45); }
  // 33280 query and key rows: a thread per row (attention_splits 1) for the stats, dq, dk and dv.
  SECTION("causal, 64 x 520 queries over 530 keys") { check_attention_gradients<true, 64, 520, 530, 16, 8>(49); }
  SECTION("heads too wide for the registers: a thread per output") { check_attention_gradients<false, 1, 9, 12, 160, 8>(57); }
  // v as wide as q and k over 16 batch elements: one node for the three (attention_grad_node<all>),
  // its stats in a stream buffer, the three kernels into its rows
  SECTION("the three in one node, causal, 16 x 64 queries and keys, D = Dv = 32") { check_attention_gradients<true, 16, 64, 64, 32, 32>(61); }
  SECTION("the three in one node, heads too wide for the registers") { check_attention_gradients<false, 16, 9, 12, 80, 80>(65); }
}
