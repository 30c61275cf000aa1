#pragma once
// The decoder's decode step (generator.hpp's step()) on a CUDA device, captured once as a CUDA graph and
// replayed for every token. Compiled by nvcc only (it includes tenfold/cuda.hpp).
//
// The step is position_step.hpp's (generator::step's math with the position read from memory, so that one
// recorded graph serves every position) over cuda::Tensors: the token, its position and the keys to
// attend over are three ints copied in from pinned host memory by the graph's first nodes (a captured
// copy reads the pinned memory as it is at each replay); the logits are copied back to pinned memory by
// its last node. The first step runs eagerly (loading the kernels and setting
// their attributes outside any capture), the second captures the graph, every later one replays it.
//
// The prompt's prefill runs on the CPU (generator::prefill, the same weights): load() copies its cache
// to the device. Positions past the cache's capacity need a new prefill (generator's window), as on the
// CPU.
#include <tenfold/cuda.hpp>

#include <span>

#include "generator.hpp"
#include "position_step.hpp"

namespace gpt {

template <index_t V>
struct device_decoder {
  static constexpr index_t T = context; // the cache's capacity
  template <class S>
  using dev = cuda::Tensor<float, S>;
  using ints = cuda::Tensor<std::int32_t, shape<1>>;

  // the weights, copied from the host's parameters
  dev<shape<V, width>> embed;
  dev<shape<width>> ln_f;
  struct block {
    dev<shape<width>> ln1, ln2;
    dev<shape<width, 3 * width>> qkv;
    dev<shape<width, width>> proj;
    dev<shape<width, hidden>> up;
    dev<shape<hidden, width>> down;
  } blocks[layers];
  dev<shape<T, head_dim>> cos, sin; // RoPE's tables
  // the KV cache, positions [0, length) filled
  dev<shape<1, heads, T, head_dim>> k[layers], v[layers];
  index_t length = 0;
  // the step: its inputs (token, position, keys read), stage outputs and logits
  ints id, at, keys;
  dev<shape<1, width>> x1, x21, y1;
  dev<shape<1, 3 * width>> qkv1;
  dev<shape<1, hidden>> a1;
  dev<shape<1, V>> logits1;
  cuda::pinned_buffer<std::int32_t> input{3};
  cuda::pinned_buffer<float> output{std::size_t(V)};
  // The largest plan among the step's expressions (set() checks each at compile time).
  static constexpr index_t arena_bytes = index_t(sizeof(float)) * (4 * hidden + 4 * heads * T * head_dim);
  cuda::stream stream;
  cuda::arena arena{std::size_t(arena_bytes)};
  cuda::graph step_graph;
  int steps = 0, captures = 0; // steps run, and how many of them captured a graph (1 after the second)

  explicit device_decoder(const parameters<V>& p) {
    embed.copy_from(p.embed, stream);
    ln_f.copy_from(p.ln_f, stream);
    for (index_t l = 0; l < layers; ++l) {
      const auto& h = p.blocks[l];
      auto& d = blocks[l];
      d.ln1.copy_from(h.ln1, stream), d.ln2.copy_from(h.ln2, stream), d.qkv.copy_from(h.qkv, stream);
      d.proj.copy_from(h.proj, stream), d.up.copy_from(h.up, stream), d.down.copy_from(h.down, stream);
    }
    const rope_tables<float, T, head_dim> rope;
    cos.copy_from(rope.cos, stream), sin.copy_from(rope.sin, stream);
    stream.synchronize(); // the host tables above go out of scope
  }

  // The cache of a generator that has prefilled a window on the CPU (its `length` positions).
  void load(const generator<V>& g) {
    for (index_t l = 0; l < layers; ++l) k[l].copy_from(g.k[l], stream), v[l].copy_from(g.v[l], stream);
    length = g.length;
    stream.synchronize();
  }

  // The logits after `token` at position `length`; the token and its key and value join the cache.
  std::span<const float> step(std::int32_t token) {
    if (token < 0 || token >= V)
      throw error(detail::message("gpt::device_decoder: token ", token, " is outside the vocabulary of ", V));
    if (length >= T) throw error(detail::message("gpt::device_decoder: the cache is full (", T, " positions)"));
    input[0] = token, input[1] = std::int32_t(length), input[2] = std::int32_t(length + 1);
    if (steps == 0) enqueue_step();
    else {
      if (!step_graph) step_graph = cuda::graph::capture(stream, [this] { enqueue_step(); }), ++captures;
      step_graph.launch(stream);
    }
    stream.synchronize();
    ++steps, ++length;
    return {output.data(), std::size_t(V)};
  }

  // position_step's interface: operands, key lengths and assignments on the device
  template <class U, class Sh>
  static auto in(const cuda::Tensor<U, Sh>& t) {
    return t.expr();
  }
  static auto lengths(const ints& t) { return cuda::key_lengths(t); }
  template <class D, class E>
  void set(D& dst, E&& e) {
    static_assert(cuda::arena_bytes_for<D&, E> <= arena_bytes, "gpt::device_decoder::arena_bytes is too small for this expression");
    cuda::eval(dst, std::forward<E>(e), arena, stream);
  }
 private:
  void copy_in(ints& t, int i) {
    TENFOLD_CUDA_CHECK(cudaMemcpyAsync(t.data(), input.data() + i, sizeof(std::int32_t), cudaMemcpyHostToDevice, stream.get()));
  }
  // Enqueues one step on `stream` (run, or recorded into the graph): the inputs copied in, the step
  // (position_step.hpp), the logits copied out.
  void enqueue_step() {
    copy_in(id, 0), copy_in(at, 1), copy_in(keys, 2);
    position_step(*this, *this);
    logits1.copy_to(output, stream);
  }
};
} // namespace gpt
