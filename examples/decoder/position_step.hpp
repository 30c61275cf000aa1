#pragma once
// One decode step whose position is read from memory, not passed by value: generator::step's math
// written so that one recorded sequence of kernels (a CUDA graph, device_decoder.hpp) serves every
// position. Inputs, each a one-element int32 tensor: id (the token), at (its position) and keys (at + 1,
// the keys attention reads). The RoPE rows are looked up at `at` (embedding of the tables); the new key
// and value are written into the cache where the position equals `at` (a where() over the cache); the
// attention reads the first `keys` keys through key_lengths.
//
// Written once for both evaluators: `s` is the state (the cache, the step's tensors, and the tables),
// with s.in(t) a tensor as an operand, s.lengths(t) its key_lengths and s.set(dst, expr) an assignment;
// `w` the weights (parameters<V> on the host, device_decoder's copy on the device). The CPU runs it in
// generate_test against generator::step; the device in cuda_decoder_test.
#include "model.hpp"

namespace gpt {

template <class S, class W>
void position_step(S& s, const W& w) {
  constexpr index_t T = S::T;
  const auto in = [&s](const auto& t) -> decltype(auto) { return s.in(t); };
  auto cos1 = embedding(in(s.cos), in(s.at)), sin1 = embedding(in(s.sin), in(s.at)); // [1, head_dim]
  auto here = eq(reshape<1, 1, T, 1>(arange<std::int32_t, T>()), in(s.at));          // [1, 1, T, 1]
  s.set(s.x1, embedding(in(w.embed), in(s.id)));
  for (index_t l = 0; l < layers; ++l) {
    const auto& b = w.blocks[l];
    s.set(s.qkv1, attention_in(in(s.x1), in(b.ln1), in(b.qkv)));
    s.set(s.k[l], where(here, rotated_head<1, 1, 1>(in(s.qkv1), cos1, sin1), in(s.k[l])));
    s.set(s.v[l], where(here, head<2, 1, 1>(in(s.qkv1)), in(s.v[l])));
    s.set(s.y1, merge_heads<1, 1>(attention(rotated_head<0, 1, 1>(in(s.qkv1), cos1, sin1), in(s.k[l]), in(s.v[l]), s.lengths(s.keys))));
    s.set(s.x21, residual(in(s.x1), in(s.y1), in(b.proj)));
    s.set(s.a1, mlp_in(in(s.x21), in(b.ln2), in(b.up)));
    s.set(s.x1, mlp_out(in(s.x21), in(s.a1), in(b.down)));
  }
  s.set(s.logits1, matmul(norm(in(s.x1), in(w.ln_f)), transpose(in(w.embed))));
}
} // namespace gpt
