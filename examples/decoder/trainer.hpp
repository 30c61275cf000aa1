#pragma once
// One training step of the decoder (model.hpp) on a batch of B windows, cut into R replicas of B / R
// windows. A replica runs the stages forward, each output kept, and backward through `vjp` to its
// windows' gradient (the embedding's from the output layer plus its lookups' scatter-add); the trainer
// averages the replicas' gradients inside the pass that clips them by global norm and inside AdamW's.
// Each replica evaluates in its own arena whose size is a compile-time constant (set() checks each plan
// against it), so a step allocates nothing.
//
// Why replicas: on the 2-core machines it is measured on, the two halves of a batch side by side, one
// thread each, take ~11% less time than every product and pass of the whole batch split over both threads
// (bench/RESULTS.md, fifty-second session): no barrier between the step's ~100 passes, and each core's
// working set halved. The floats do not depend on the thread count: the replicas are always R (their
// gradients summed in one order), run at once when the pool has at most R threads, one after another, each
// over the whole pool, when it has more.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <memory>
#include <new>
#include <span>
#include <utility>

#include "model.hpp"

namespace gpt {

struct adamw_options {
  float beta1 = 0.9f, beta2 = 0.99f, eps = 1e-8f, weight_decay = 0.1f, clip = 1.0f;
};

// Forward and backward on B windows: the stages' outputs, the gradients flowing back, and the
// parameters' gradient of these windows' mean loss (in *grad).
template <index_t V, index_t B>
struct replica {
  static constexpr index_t T = context, N = B * T;
  // The largest plan among the step's expressions: attention's backward pass (the probabilities and
  // their gradient, B x heads x T x T each, with the rotated q and k and a few [N, width] operands).
  static constexpr index_t arena_bytes = index_t(sizeof(float)) * (3 * B * heads * T * T + 8 * N * hidden);
  arena_buffer arena{std::size_t(arena_bytes)};
  template <class D, class E>
  void set(D& dst, E&& e) {
    static_assert(eval_arena_bytes<D, E> <= arena_bytes, "gpt::replica::arena_bytes is too small for this expression");
    eval(dst, std::forward<E>(e), arena.span());
  }
  // Statements run as one step in the same arena, the products several of them read computed once
  // (save_forward: the logits for the loss and its three gradients; the backward product that a norm's
  // input and scale gradients share).
  template <class S>
  void run_shared(const S& s) {
    const auto shared = save_forward(s);
    static_assert(step_plan<std::remove_cvref_t<decltype(shared)>>::bytes <= arena_bytes, "gpt::replica::arena_bytes is too small for this step");
    run_step(shared, arena.span());
  }

  rope_tables<float, T, head_dim> rope;
  Tensor<std::int32_t, shape<N>> ids;
  Tensor<std::int64_t, shape<N>> targets;
  // the stages' outputs, per block
  Tensor<float, shape<N, width>> x[layers + 1], y[layers], x2[layers];
  // (one qkv for all blocks: only the rotated heads read it, and rope's adjoint reads its gradient alone;
  // 3.5 MB less memory, the same bits; on AMD Zen 3 no change in speed beyond the noise)
  Tensor<float, shape<N, 3 * width>> qkv;
  Tensor<float, shape<3, B, heads, T, head_dim>> h[layers]; // rotated q and k, and v (rotated_heads)
  // the norms' outputs, the products' inputs: norm(x) for qkv, norm(x2) for up (the backward's weight
  // gradients read them, and norm_linear_vjp)
  Tensor<float, shape<N, width>> xn1[layers], xn2[layers];
  Tensor<float, shape<N, hidden>> act[layers]; // gelu(a), a = xn up: the down projection's weight gradient reads it
  // gelu's slope at a, kept for the backward pass instead of a (its only reader there): stored with
  // gelu(a) by the up product's store (the two epilogues together: one exp for both, while a is in
  // registers); the backward product multiplies by it instead of computing it from a read back from L3
  Tensor<float, shape<N, hidden>> slope[layers];
  // the gradients flowing back
  Tensor<float, shape<N, width>> gx, gx2;
  Tensor<float, shape<B, heads, T, head_dim>> gy; // the heads' outputs' gradient
  Tensor<float, shape<N, 3 * width>> gqkv;
  Tensor<float, shape<N, hidden>> ga;
  Tensor<float, shape<>> loss;
  // the parameters' gradient
  std::unique_ptr<parameters<V>> grad = std::make_unique<parameters<V>>();

  // The forward pass on ids, keeping every stage's output (and gelu's slopes for training).
  template <bool Training = false>
  void forward(const parameters<V>& p) {
    set(x[0], embedding(p.embed, ids));
    for (index_t l = 0; l < layers; ++l) {
      const auto& b = p.blocks[l];
      set(xn1[l], norm(x[l], b.ln1)); // (attention_in, its norm kept)
      set(qkv, matmul(xn1[l], b.qkv));
      { // rotated_heads, part by part
        auto h0 = head_part<0, B, T>(h[l]);
        auto h1 = head_part<1, B, T>(h[l]);
        auto h2 = head_part<2, B, T>(h[l]);
        set(h0, rotated_head<0, B, T>(qkv, rope.cos, rope.sin));
        set(h1, rotated_head<1, B, T>(qkv, rope.cos, rope.sin));
        set(h2, head<2, B, T>(qkv));
      }
      set(y[l], attend<B, T>(h[l]));
      set(x2[l], residual(x[l], y[l], b.proj));
      // mlp_in and mlp_out's activation, kept: gelu(norm(x2) up)
      set(xn2[l], norm(x2[l], b.ln2));
      if constexpr (Training)
        eval(together(assign(act[l], gelu_tanh(matmul(xn2[l], b.up))), assign(slope[l], ops::call<ops::gelu_tanh_slope>(matmul(xn2[l], b.up)))));
      else set(act[l], gelu_tanh(matmul(xn2[l], b.up)));
      set(x[l + 1], residual(x2[l], act[l], b.down));
    }
  }
  // The mean cross-entropy of the batch in ids / targets.
  float evaluate(const parameters<V>& p) {
    forward(p);
    set(loss, head_loss(x[layers], p.ln_f, p.embed, targets));
    return loss();
  }

  // The batch's loss and every parameter's gradient (in *grad).
  void backward(const parameters<V>& p) {
    forward<true>(p);
    auto& g = *grad;
    auto [value, dx, dln, dembed] = value_and_grad(
        [this](const auto& x_, const auto& g_, const auto& e_) { return head_loss(x_, g_, e_, targets); }, x[layers],
        p.ln_f, p.embed);
    run_shared(statements(assign(loss, value), assign(gx, dx), assign(g.ln_f, dln), assign(g.embed, dembed)));
    for (index_t l = layers - 1; l >= 0; --l) {
      const auto& b = p.blocks[l];
      auto& gb = g.blocks[l];
      // x[l + 1] = x2 + gelu(a) down: x2's gradient is gx (the residual) and a's vjp(mlp_out)'s
      // gx downᵀ * gelu_tanh_slope(a) (gelu_tanh's entry in the op table), the slope kept by the forward
      // pass; down's gradient gelu(a)ᵀ gx from the kept activation
      set(ga, matmul(gx, transpose(b.down)) * slope[l]), set(gb.down, matmul(transpose(act[l]), gx));
      // a = norm(x2) up
      auto [e_x2, e_ln2, e_up] = norm_linear_vjp(x2[l], b.ln2, b.up, xn2[l], ga);
      run_shared(statements(assign(gx2, gx + e_x2), assign(gb.ln2, e_ln2), assign(gb.up, e_up)));
      // x2 = x + y proj
      auto [f_x, f_y, f_proj] = vjp(residual, gx2, x[l], y[l], b.proj);
      set(gb.proj, f_proj);
      { // y's gradient stored as the heads' [B, heads, T, head_dim] (merge_heads' adjoint, in the product's store)
        auto by_position = permute<0, 2, 1, 3>(gy);
        set(by_position, reshape<B, T, heads, head_dim>(f_y));
      }
      // y = attention(q, k, v) over the rotated heads h (q and k) and v, then h = the rotated heads of
      // qkv: one step, each head part's gradient straight into its columns of gqkv (rope's adjoint for q
      // and k; v's as it is). Attention's three gradients come from one node (its rows dq | dk | dv),
      // which the step computes once (save_forward) and the three statements read in place. (Through
      // a gradient of h as a whole, they were first copied into a [3, B, heads, T, D] tensor.)
      {
        using part_shape = shape<B, heads, T, head_dim>;
        const float* hp = h[l].data();
        const auto q = map<const float, part_shape>(hp), k = map<const float, part_shape>(hp + part_shape::size),
                   v = map<const float, part_shape>(hp + 2 * part_shape::size);
        auto [d_q, d_k, d_v] = vjp([](const auto& q_, const auto& k_, const auto& v_) { return attention(q_, k_, v_, causal); }, gy, q, k, v);
        auto rotate = [this](const auto& x_) { return tenfold::rope(x_, rope.cos, rope.sin); };
        auto g0 = head<0, B, T>(gqkv);
        auto g1 = head<1, B, T>(gqkv);
        auto g2 = head<2, B, T>(gqkv);
        auto [r_q] = vjp(rotate, d_q, head<0, B, T>(qkv));
        auto [r_k] = vjp(rotate, d_k, head<1, B, T>(qkv));
        run_shared(statements(assign(g0, r_q), assign(g1, r_k), assign(g2, d_v)));
      }
      // qkv = norm(x) wqkv
      auto [i_x, i_ln1, i_qkv] = norm_linear_vjp(x[l], b.ln1, b.qkv, xn1[l], gqkv);
      run_shared(statements(assign(gx, f_x + i_x), assign(gb.ln1, i_ln1), assign(gb.qkv, i_qkv)));
    }
    // the lookups' share of the embedding's gradient: a scatter-add of each position's gradient into its
    // token's row (take's derivative), added to the output layer's
    auto [lookups] = vjp([this](const auto& e_) { return embedding(e_, ids); }, gx, p.embed);
    set(g.embed, g.embed + lookups);
  }
};

// The training step: the batch's windows in ids / targets (B x context, window after window), cut into R
// replicas of B / R windows; their mean gradient clipped, then AdamW.
template <index_t V, index_t B, index_t R = 2>
struct trainer {
  static_assert(R >= 1 && B % R == 0, "gpt::trainer: the batch must cut into R replicas of equal size");
  static constexpr index_t T = context, N = B * T, share = B / R;
  Tensor<std::int32_t, shape<N>> ids;
  Tensor<std::int64_t, shape<N>> targets;
  std::array<std::unique_ptr<replica<V, share>>, R> parts = make_parts(std::make_index_sequence<std::size_t(R)>{});
  // Adam's moments
  std::unique_ptr<parameters<V>> m = std::make_unique<parameters<V>>(), v = std::make_unique<parameters<V>>();
  adamw_options options;
  optim::adam decayed{{.beta1 = options.beta1, .beta2 = options.beta2, .eps = options.eps, .weight_decay = options.weight_decay, .decoupled = true}};
  optim::adam plain{{.beta1 = options.beta1, .beta2 = options.beta2, .eps = options.eps, .weight_decay = 0.0f, .decoupled = true}};
  std::array<Tensor<float, shape<>>, 2 + 6 * layers> squares; // each tensor's squared norm
  double last_norm = 0; // the gradients' global norm before clipping, at the last step
  // false: the replicas one after another, each over the whole pool, whatever its size (the same floats)
  bool at_once = true;

  // The batch's mean cross-entropy: the replicas' mean (each a mean over as many positions).
  float loss() const {
    float total = 0;
    for (const auto& r : parts) total += r->loss();
    return total / float(R);
  }
  // The mean cross-entropy of the batch in ids / targets.
  float evaluate(const parameters<V>& p) {
    each_replica([&](replica<V, share>& r) { r.evaluate(p); });
    return loss();
  }
  // The batch's loss and every replica's gradient.
  void backward(const parameters<V>& p) {
    each_replica([&](replica<V, share>& r) { r.backward(p); });
  }
  // One AdamW step at learning rate lr on the batch in ids / targets; returns the batch's loss (before
  // the step).
  float step(parameters<V>& p, float lr) {
    backward(p);
    update(p, lr);
    return loss();
  }
  // The batch's gradient (the replicas' mean) into out.
  void gradient(parameters<V>& out) {
    with_gradients([&](auto&... g) {
      each_of([&](const std::string&, bool, auto& o, auto&... gs) { parts[0]->set(o, mean(gs...)); }, out, g...);
    });
  }

  // The mean gradient clipped, then AdamW at learning rate lr.
  void update(parameters<V>& p, float lr) {
    with_gradients([&](auto&... g) {
      // Clipping by global norm (PyTorch's clip_grad_norm_), then AdamW, decay on matrices only. Each
      // tensor is one replica's task in both passes (the first R-th of the parameters, by count, the
      // first replica's, ...), in its arena: two regions on the pool, not one per tensor and pass.
      const auto mine = [](index_t start, index_t r) { return start * R / parameters<V>::count == r; };
      on_replicas([&](index_t r) {
        index_t i = 0, start = 0;
        each_of(
            [&](const std::string&, bool, auto&... gs) {
              if (mine(start, r)) parts[std::size_t(r)]->set(squares[std::size_t(i)], sum(square(mean(gs...))));
              ++i, start += index_t((gs.size(), ...));
            },
            g...);
      });
      double total = 0;
      for (const auto& s : squares) total += double(s());
      last_norm = std::sqrt(total);
      const float scale = last_norm > options.clip ? float(options.clip / (last_norm + 1e-6)) : 1.0f;
      decayed.begin_step(lr), plain.begin_step(lr);
      // (the mean and the clipped gradient are read inside Adam's pass, not stored first)
      on_replicas([&](index_t r) {
        index_t start = 0;
        each_of(
            [&](const std::string&, bool decay, auto& w, auto& mw, auto& vw, auto&... gs) {
              if (mine(start, r)) {
                const optim::adam& opt = decay ? decayed : plain;
                if (scale != 1.0f) opt.update(w, mw, vw, mean(gs...) * scale);
                else opt.update(w, mw, vw, mean(gs...));
              }
              start += index_t(w.size());
            },
            p, *m, *v, g...);
      });
    });
  }

 private:
  template <std::size_t... I>
  static std::array<std::unique_ptr<replica<V, share>>, R> make_parts(std::index_sequence<I...>) {
    return {((void)I, std::make_unique<replica<V, share>>())...};
  }
  template <class F>
  void with_gradients(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { f(*parts[I]->grad...); }(std::make_index_sequence<std::size_t(R)>{});
  }
  template <class... G>
  static decltype(auto) mean(const G&... g) {
    if constexpr (sizeof...(G) == 1) return (g, ...);
    else return (g + ...) * (1.0f / float(R));
  }
  // f(replica) for each replica, its windows copied in first (on_replicas).
  template <class F>
  void each_replica(F&& f) {
    for (index_t r = 0; r < R; ++r) {
      std::copy_n(ids.data() + r * share * T, share * T, parts[std::size_t(r)]->ids.data());
      std::copy_n(targets.data() + r * share * T, share * T, parts[std::size_t(r)]->targets.data());
    }
    on_replicas([&](index_t r) { f(*parts[std::size_t(r)]); });
  }
  // f(r) for r in [0, R): side by side on the pool's threads when the pool has at most R threads (each
  // one's passes then run on its thread alone), else one after another, each over the whole pool.
  template <class F>
  void on_replicas(F&& f) {
    auto& pool = cpu::thread_pool::instance();
    auto task = [&](int r) { f(index_t(r)); };
    if (at_once && pool.size() <= R) pool.run(int(R), task);
    else
      for (int r = 0; r < int(R); ++r) task(r);
  }
};
} // namespace gpt
