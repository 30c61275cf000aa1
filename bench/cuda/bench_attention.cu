// attention on the device (cuda/attention.hpp, cuda/attention_backward.hpp), f32, [B, H, S, D] with the
// heads as a batch axis: the forward pass, and the backward pass as value_and_grad's three gradients of
// sum(attention(q, k, v) * r), timed as their three assignments, and as one gradient of q, k and v
// packed in one tensor. PyTorch's scaled_dot_product_attention on
// the same shapes: bench/cuda/torch_compare.py (issue 18's target: >= 1.0x).
#include "bench_timing.hpp"

#include <tenfold/autodiff/backward.hpp>

using namespace tenfold;

namespace {
// Part I of a [3, B, H, S, D] tensor, as [B, H, S, D].
template <index_t I, index_t B, index_t H, index_t S, index_t D>
auto part(const auto& x) {
  return reshape<B, H, S, D>(slice<range<I, I + 1>, whole, whole, whole, whole>(x));
}

template <index_t B, index_t H, index_t S, index_t D, bool Causal>
void attention_case() {
  using X = shape<B, H, S, D>;
  rng gen(11);
  cuda::Tensor<float, X> q, k, v, r, out, dq, dk, dv;
  q = normal<X>(gen);
  k = normal<X>(gen);
  v = normal<X>(gen);
  r = normal<X>(gen);
  const auto fwd = [](const auto& q_, const auto& k_, const auto& v_) {
    if constexpr (Causal) return attention(q_, k_, v_, causal);
    else return attention(q_, k_, v_);
  };
  const double f = bench::median_ms([&] { out = fwd(q.expr(), k.expr(), v.expr()); });
  const auto re = r.expr();
  auto [l, gq, gk, gv] = value_and_grad([&](const auto& q_, const auto& k_, const auto& v_) { return sum(fwd(q_, k_, v_) * re); }, q, k, v);
  const double bwd = bench::median_ms([&] { dq = gq, dk = gk, dv = gv; }, 20);
  // The same backward with q, k and v parts of one tensor [3, B, H, S, D], as a model's qkv projection
  // gives them (examples/decoder): one gradient assignment, so the stats (lse, delta) are computed once,
  // where the three assignments above compute them once each.
  using P = shape<3, B, H, S, D>;
  cuda::Tensor<float, P> qkv, dqkv;
  qkv = normal<P>(gen);
  auto [lp, gqkv] = value_and_grad(
      [&](const auto& x) { return sum(fwd(part<0, B, H, S, D>(x), part<1, B, H, S, D>(x), part<2, B, H, S, D>(x)) * re); },
      qkv);
  const double bwd_packed = bench::median_ms([&] { dqkv = gqkv; }, 20);
  // FLOPs as FlashAttention counts them: 4 B H S^2 D forward (halved when causal), 2.5x that backward.
  const double flops = 4.0 * B * H * S * S * D * (Causal ? 0.5 : 1.0);
  std::printf("[B %ld H %ld S %5ld D %3ld%s] forward %8.3f ms (%6.2f TFLOP/s) | backward %8.3f ms (%6.2f TFLOP/s) | one qkv: %8.3f ms "
              "(%6.2f TFLOP/s)\n",
              long(B), long(H), long(S), long(D), Causal ? " causal" : "       ", f, flops / f / 1e9, bwd, 2.5 * flops / bwd / 1e9,
              bwd_packed, 2.5 * flops / bwd_packed / 1e9);
}
} // namespace

int main() {
  if (!bench::device_ready()) return 0;
  attention_case<12, 4, 64, 32, true>();    // examples/decoder's attention (batch 12, 4 heads, context 64)
  attention_case<8, 12, 128, 32, false>();  // MiniLM's (12 heads of 32), 8 sentences of 128 tokens
  attention_case<4, 8, 512, 64, false>();
  attention_case<4, 8, 512, 64, true>();
  attention_case<2, 8, 2048, 64, true>();
}
