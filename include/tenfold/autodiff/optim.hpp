#pragma once
// Optimizers as state updates: each update reads a parameter, its gradient and its moments and writes
// them back, as tenfold assignments (so any backend runs them). The moments are tensors of the
// parameter's shape that the caller keeps beside it (optimizer state, like the parameters themselves);
// nothing is allocated per step. Hyper-parameters follow PyTorch's torch.optim:
//   sgd:   v = momentum v + (g + wd p) [dampening 0];  p -= lr (nesterov ? g + wd p + momentum v : v)
//   adam:  g += wd p (L2); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//          p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//   adamw: as adam, but the decay is decoupled: p *= 1 - lr wd first, and g is not changed.
// Learning-rate schedules are plain functions of the step (the rate is a run-time scalar of the update).
#include <cmath>
#include <numbers>

#include <utility>

#include "tenfold/tenfold.hpp" // (the CPU's together(...), cpu/together.hpp)

namespace tenfold::optim {

// A parameter, moment or gradient as an expression operand: a host Tensor (or any expression) is one
// itself, a device tensor (cuda::Tensor) gives its leaf. So every update below runs wherever the
// parameter lives, as assignments that backend evaluates.
template <class P>
decltype(auto) operand_of(const P& p) {
  if constexpr (requires { p.expr(); }) return p.expr();
  else return (p);
}

} // namespace tenfold::optim

namespace tenfold::detail {
// *dst = value for each (dst, value) pair, in order: for host tensors with elementwise values, one pass
// over the elements (together: a parameter, its gradient and its moments read once and the three
// written back); otherwise one assignment after another (a device's tensors).
template <class... D, class... E>
void commit_updates(std::pair<D*, E>... a) {
  if constexpr ((((is_tensor_v<D> || borrows_elements_v<D>) && is_elementwise_tree<decltype(as_node(std::declval<const E&>()))>()) && ...))
    tenfold::eval(tenfold::together(tenfold::assign(*a.first, a.second)...));
  else ((*a.first = a.second), ...);
}
} // namespace tenfold::detail

namespace tenfold::optim {

// Moments of one parameter of type P (a Tensor<T, S> or a cuda::Tensor<T, S>), zero at the start (a
// fresh tensor is zero-filled on either side).
template <class P>
struct moments_of {
  P m, v;
};
template <class T, class S>
using moments = moments_of<Tensor<T, S>>;

struct adam_options {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  bool decoupled = false; // AdamW
};

// Adam / AdamW. Call begin_step() once per step (it advances the bias correction), then update() for
// every parameter with its gradient (a tensor: it is read twice).
class adam {
 public:
  adam_options options;
  explicit adam(adam_options o = {}) : options(o) {}
  long step() const { return step_; }
  void begin_step(float lr) {
    ++step_;
    lr_ = lr;
    bias1_ = 1.0f - float(std::pow(double(options.beta1), double(step_)));
    bias2_ = 1.0f - float(std::pow(double(options.beta2), double(step_)));
  }
  void begin_step() { begin_step(options.lr); }

  template <class P, class G>
  void update(P& p, moments_of<P>& s, const G& grad) const {
    update(p, s.m, s.v, grad);
  }
  // The same with the moments m and v held elsewhere (tensors of p's type, zero at the start).
  template <class P, class G>
  void update(P& p, P& m, P& v, const G& grad) const {
    using T = typename P::value_type;
    auto&& g = operand_of(grad);
    auto&& pe = operand_of(p);
    auto&& me = operand_of(m);
    auto&& ve = operand_of(v);
    static_assert(std::is_same_v<detail::shape_of_t<std::remove_cvref_t<decltype(g)>>, typename P::shape_type>,
                  "tenfold::optim::adam: the gradient must have the parameter's shape");
    const T b1 = options.beta1, b2 = options.beta2, wd = options.weight_decay;
    // (reads the new moments: each element's own, written just before in the same pass)
    const auto moved = pe - me * T(lr_ / bias1_) / (sqrt(ve) * T(1 / std::sqrt(bias2_)) + T(options.eps));
    if (options.decoupled && wd != 0)
      detail::commit_updates(std::pair(&p, pe * T(1 - lr_ * wd)), std::pair(&m, me * b1 + g * T(1 - b1)),
                     std::pair(&v, ve * b2 + square(g) * T(1 - b2)), std::pair(&p, moved));
    else if (options.decoupled || wd == 0)
      detail::commit_updates(std::pair(&m, me * b1 + g * T(1 - b1)), std::pair(&v, ve * b2 + square(g) * T(1 - b2)), std::pair(&p, moved));
    else
      detail::commit_updates(std::pair(&m, me * b1 + (g + pe * wd) * T(1 - b1)), std::pair(&v, ve * b2 + square(g + pe * wd) * T(1 - b2)),
                     std::pair(&p, moved));
  }

 private:
  long step_ = 0;
  float lr_ = 0, bias1_ = 1, bias2_ = 1;
};

struct sgd_options {
  float lr = 1e-2f, momentum = 0.0f, weight_decay = 0.0f;
  bool nesterov = false;
};

// SGD with momentum (PyTorch's form: the first step's buffer is the gradient itself), Nesterov and L2
// weight decay. The velocity buffer is `s.m` (`s.v` is unused).
class sgd {
 public:
  sgd_options options;
  explicit sgd(sgd_options o = {}) : options(o) {}
  void begin_step(float lr) { lr_ = lr, ++step_; }
  void begin_step() { begin_step(options.lr); }

  template <class P, class G>
  void update(P& p, moments_of<P>& s, const G& grad) const {
    using T = typename P::value_type;
    auto&& g = operand_of(grad);
    auto&& pe = operand_of(p);
    auto&& ve = operand_of(s.m);
    static_assert(std::is_same_v<detail::shape_of_t<std::remove_cvref_t<decltype(g)>>, typename P::shape_type>,
                  "tenfold::optim::sgd: the gradient must have the parameter's shape");
    const T mu = options.momentum, wd = options.weight_decay, lr = lr_;
    if (mu == 0) {
      p = pe - (g + pe * wd) * lr;
      return;
    }
    const auto decayed = g + pe * wd;
    auto apply = [&](const auto& velocity) { // the velocity first, then the step that reads it
      if (options.nesterov) detail::commit_updates(std::pair(&s.m, velocity), std::pair(&p, pe - (decayed + ve * mu) * lr));
      else detail::commit_updates(std::pair(&s.m, velocity), std::pair(&p, pe - ve * lr));
    };
    if (step_ == 1) apply(decayed);
    else apply(ve * mu + decayed);
  }

 private:
  long step_ = 0;
  float lr_ = 0;
};

// Clipping by global norm (PyTorch's clip_grad_norm_): the norm of all the gradients together; where it
// exceeds max_norm every gradient is scaled by max_norm / (norm + 1e-6). Returns the norm before clipping.
// The gradients are tensors on the host or on a device (each one's square sum is read back).
template <class... G>
double clip_grad_norm(double max_norm, G&... grads) {
  double squares = 0;
  auto add = [&squares]<template <class, class> class TT, class T, class S>(TT<T, S>& g) {
    TT<T, shape<>> s;
    s = sum(square(operand_of(g)));
    if constexpr (requires { s(); }) squares += double(s());
    else squares += double(to_host(s)()); // a device tensor: its backend's to_host, found by ADL
  };
  (add(grads), ...);
  const double norm = std::sqrt(squares);
  if (norm > max_norm) {
    auto scale = [f = max_norm / (norm + 1e-6)](auto& g) {
      using T = typename std::remove_cvref_t<decltype(g)>::value_type;
      g = operand_of(g) * T(f);
    };
    (scale(grads), ...);
  }
  return norm;
}

// Learning-rate schedules: the rate at step t (from 0) of `total`.
// Linear warm-up over `warmup` steps, then cosine decay to `floor` (as timm's / PyTorch's
// CosineAnnealingLR after LinearLR).
inline float cosine_lr(long t, long total, float base, long warmup = 0, float floor = 0.0f) {
  if (t < warmup) return base * float(t + 1) / float(warmup);
  const double progress = total > warmup ? double(t - warmup) / double(total - warmup) : 1.0;
  return floor + (base - floor) * float(0.5 * (1 + std::cos(std::numbers::pi * std::min(progress, 1.0))));
}
// Step decay: base * gamma^(t / every).
inline float step_lr(long t, float base, long every, float gamma) {
  return base * float(std::pow(double(gamma), double(t / every)));
}
} // namespace tenfold::optim
