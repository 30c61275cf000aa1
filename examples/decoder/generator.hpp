#pragma once
// Generating text with the decoder of model.hpp and a KV cache. The cache is state: per layer, the rotated
// keys and the values of the positions seen so far ([1, heads, context, head_dim] each, its capacity the
// training context). A prompt is prefilled in one pass (the training forward pass over the window's
// positions only: [upto<context>] rows, issue 16's bounded extents; causal, writing every layer's keys
// and values into the cache); then each decode
// step runs one position: its q, k and v, k and v appended to the cache, attention of q over the first
// `length` keys (attention(..., first_keys(length))), and the rest of the block on one row.
//
// The window: positions are absolute from the window's start (RoPE), so when the cache is full the
// window drops its older half and the rest is prefilled again (the text the model sees then starts
// half a context back). window_begin(n) gives where the window of a text of n tokens starts, so that
// cached decoding and recomputing the whole window at every token (`recompute`, the reference) see
// exactly the same tokens at the same positions.
//
// Every expression is evaluated into one arena of compile-time size (as the trainer does): prefill and
// decode steps allocate nothing.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>

#include "model.hpp"

namespace gpt {

template <index_t V>
struct generator {
  static constexpr index_t T = context; // the cache's capacity

  // Where the window of a text of n tokens begins: 0 until the text outgrows the cache, then moved by
  // half a context each time it would.
  static constexpr std::size_t window_begin(std::size_t n) {
    constexpr std::size_t cap = std::size_t(T), half = cap / 2;
    return n <= cap ? 0 : ((n - cap - 1) / half + 1) * half;
  }

  // The largest plan: the prefill's MLP (a [T, hidden] operand) and attention's rotated q.
  static constexpr index_t arena_bytes = index_t(sizeof(float)) * (4 * T * hidden + 4 * T * width);
  arena_buffer arena{std::size_t(arena_bytes)};
  template <class D, class E>
  void set(D&& dst, E&& e) { // (dst: a tensor or a view of one)
    static_assert(eval_arena_bytes<D, E> <= arena_bytes, "gpt::generator::arena_bytes is too small for this expression");
    eval(std::forward<D>(dst), std::forward<E>(e), arena.span());
  }

  rope_tables<float, T, head_dim> rope;
  // the KV cache: positions [0, length) of the window starting at text position `begin`, whose tokens are
  // `held` (to recognise the text a step continues)
  Tensor<float, shape<1, heads, T, head_dim>> k[layers], v[layers];
  index_t length = 0;
  std::size_t begin = 0;
  std::int32_t held[T]{};

  // prefill: the window's positions, as many as it has (upto<T> rows: the arena and these buffers are
  // planned for T, the loops run to the length)
  rope_tables<float, upto<T>, head_dim> window_rope;
  Tensor<std::int32_t, shape<upto<T>>> ids;
  Tensor<float, shape<upto<T>, width>> x, x2, y;
  Tensor<float, shape<heads, upto<T>, head_dim>> q, kr, vh; // the heads' rotated queries and keys, and values
  Tensor<float, shape<upto<T>, 3 * width>> qkv;
  Tensor<float, shape<upto<T>, hidden>> a;
  Tensor<float, shape<upto<T>, V>> all_logits;
  // one decode step
  Tensor<std::int32_t, shape<1>> id;
  Tensor<float, shape<1, width>> x1, x21, y1;
  Tensor<float, shape<1, 3 * width>> qkv1;
  Tensor<float, shape<1, hidden>> a1;
  Tensor<float, shape<1, head_dim>> cos1, sin1;
  Tensor<float, shape<1, heads, 1, head_dim>> k1, v1;
  Tensor<float, shape<1, V>> logits1;

  // The logits of the token after tokens (the whole text so far; its window is what the model sees). With
  // `cached`, a text that extends the cached window by one token is one decode step; anything else
  // (the first call, a window that moved, another text) is a prefill of the window.
  std::span<const float> next(const parameters<V>& p, std::span<const std::int32_t> tokens, bool cached = true) {
    if (tokens.empty()) throw error("gpt::generator: no tokens to continue (the prompt is empty)");
    for (std::int32_t t : tokens)
      if (t < 0 || t >= V) throw error(detail::message("gpt::generator: token ", t, " is outside the vocabulary of ", V));
    const std::size_t n = tokens.size(), w = window_begin(n);
    const std::span<const std::int32_t> window = tokens.subspan(w);
    if (cached && w == begin && index_t(window.size()) == length + 1 && length < T &&
        std::equal(window.begin(), window.end() - 1, held))
      return step(p, window.back());
    begin = w;
    return prefill(p, window);
  }

  // The window's tokens in one pass (1 <= size <= T): the cache filled with positions [0, size). The
  // heads as [heads, upto<T>, head_dim] (permuted views of qkv's columns: the bound moves with its axis).
  std::span<const float> prefill(const parameters<V>& p, std::span<const std::int32_t> window) {
    const index_t n = index_t(window.size());
    if (n < 1 || n > T) throw error(detail::message("gpt::generator: a prefill of ", n, " tokens; the cache holds 1 to ", T));
    ids.set_length(n);
    for (index_t i = 0; i < n; ++i) ids(i) = window[std::size_t(i)];
    window_rope.first(n);
    const auto heads_of = [](const auto& cols) { return permute<1, 0, 2>(reshape<upto<T>, heads, head_dim>(cols)); };
    set(x, embedding(p.embed, ids));
    for (index_t l = 0; l < layers; ++l) {
      const auto& b = p.blocks[l];
      set(qkv, attention_in(x, b.ln1, b.qkv));
      set(q, tenfold::rope(heads_of(slice<whole, range<0, width>>(qkv)), window_rope.cos, window_rope.sin));
      set(kr, tenfold::rope(heads_of(slice<whole, range<width, 2 * width>>(qkv)), window_rope.cos, window_rope.sin));
      set(vh, heads_of(slice<whole, range<2 * width, 3 * width>>(qkv)));
      set(y, reshape<upto<T>, width>(permute<1, 0, 2>(attention(q, kr, vh, causal))));
      for (index_t h = 0; h < heads; ++h) { // into the cache: the same layout, [heads, T, head_dim]
        std::memcpy(&k[l](0, h, 0, 0), &kr(h, 0, 0), sizeof(float) * std::size_t(n * head_dim));
        std::memcpy(&v[l](0, h, 0, 0), &vh(h, 0, 0), sizeof(float) * std::size_t(n * head_dim));
      }
      set(x2, residual(x, y, b.proj));
      set(a, mlp_in(x2, b.ln2, b.up));
      set(x, mlp_out(x2, a, b.down));
    }
    set(all_logits, matmul(norm(x, p.ln_f), transpose(p.embed)));
    std::copy(window.begin(), window.end(), held);
    length = n;
    return {all_logits.data() + (n - 1) * V, std::size_t(V)};
  }

  // One position: token at position `length` of the window.
  std::span<const float> step(const parameters<V>& p, std::int32_t token) {
    if (length >= T) throw error(detail::message("gpt::generator: the cache is full (", T, " positions)"));
    const index_t at = length;
    id(0) = token;
    for (index_t d = 0; d < head_dim; ++d) cos1(0, d) = rope.cos(at, d), sin1(0, d) = rope.sin(at, d);
    set(x1, embedding(p.embed, id));
    for (index_t l = 0; l < layers; ++l) {
      const auto& b = p.blocks[l];
      set(qkv1, attention_in(x1, b.ln1, b.qkv));
      set(k1, rotated_head<1, 1, 1>(qkv1, cos1, sin1));
      set(v1, head<2, 1, 1>(qkv1));
      for (index_t h = 0; h < heads; ++h) { // appended to the cache at position `at`
        std::memcpy(&k[l](0, h, at, 0), &k1(0, h, 0, 0), sizeof(float) * head_dim);
        std::memcpy(&v[l](0, h, at, 0), &v1(0, h, 0, 0), sizeof(float) * head_dim);
      }
      set(y1, merge_heads<1, 1>(attention(rotated_head<0, 1, 1>(qkv1, cos1, sin1), k[l], v[l], first_keys(at + 1))));
      set(x21, residual(x1, y1, b.proj));
      set(a1, mlp_in(x21, b.ln2, b.up));
      set(x1, mlp_out(x21, a1, b.down));
    }
    set(logits1, matmul(norm(x1, p.ln_f), transpose(p.embed)));
    held[at] = token;
    length = at + 1;
    return {logits1.data(), std::size_t(V)};
  }
};
} // namespace gpt
