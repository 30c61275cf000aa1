#pragma once
// Composites written as plain expressions from the table's ops — no kernel of their own. Reductions
// taken with keepdims and broadcast back are computed once per row by the evaluator, so softmax,
// layer_norm, cross_entropy and the rest each run as one loop nest per output row.
#include "tenfold/core/leaf_operand_node.hpp"
#include "tenfold/core/let.hpp"
#include "tenfold/core/conv_node.hpp"
#include "tenfold/core/matmul_node.hpp"
#include "tenfold/core/reduce_node.hpp"
#include "tenfold/core/views.hpp"
#include "tenfold/ops/api.hpp"
#include "tenfold/ops/creation.hpp"

namespace tenfold {

// Every composite first turns its operands into nodes (as_node owns a temporary Tensor), then uses
// those: a named parameter bound to a temporary would otherwise be captured by reference and dangle.
// An operand read more than once is bound with `let` when computing it costs more than reading it
// (it holds a matmul, a reduction or a let): `layer_norm(x @ w + b)` runs the GEMM once.

namespace detail {
template <class N>
constexpr bool costly() {
  if constexpr (is_matmul_node_v<N> || is_conv_node_v<N> || is_reduce_node_v<N> || is_scan_node_v<N> || is_let_node_v<N> ||
                is_leaf_operand_node_v<N>)
    return true;
  else if constexpr (requires { N::args; })
    return []<class... C>(detail::tuple<C...>*) { return (false || ... || costly<C>()); }(static_cast<decltype(N::args)*>(nullptr));
  else if constexpr (requires { N::arg; }) return costly<std::remove_cvref_t<decltype(N::arg)>>();
  else return false;
}
// body(x), with x bound by a let if it is costly to recompute.
template <class X, class F>
auto shared(X&& x, F&& body) {
  auto n = as_node(std::forward<X>(x));
  if constexpr (costly<decltype(n)>()) return let(std::move(n), std::forward<F>(body));
  else return std::forward<F>(body)(std::move(n));
}
} // namespace detail

// softmax(x, axis<k>) = exp(x - max) / sum(exp(x - max)); stable for any finite input.
template <expression X, int A = -1>
auto softmax(X&& xs, axes_t<A> ax = {}) {
  return detail::shared(std::forward<X>(xs), [ax](const auto& x) {
    auto e = exp(x - max(x, ax, keepdims));
    return e / sum(e, ax, keepdims);
  });
}

// log_softmax(x) = (x - max) - log(sum(exp(x - max)))
template <expression X, int A = -1>
auto log_softmax(X&& xs, axes_t<A> ax = {}) {
  return detail::shared(std::forward<X>(xs), [ax](const auto& x) {
    auto shifted = x - max(x, ax, keepdims);
    return shifted - log(sum(exp(shifted), ax, keepdims));
  });
}

// Layer normalisation over one axis with a two-pass variance: mean first, then the mean of squared
// deviations (accurate when |mean| >> std). gamma and beta broadcast against x.
template <expression X, class G, class B, int A = -1>
auto layer_norm(X&& xs, G&& gamma, B&& beta, float eps = 1e-5f, axes_t<A> ax = {}) {
  auto g = detail::as_node(std::forward<G>(gamma));
  auto b = detail::as_node(std::forward<B>(beta));
  return detail::shared(std::forward<X>(xs), [ax, eps, g, b](const auto& x) {
    auto centered = x - mean(x, ax, keepdims);
    return centered * rsqrt(mean(square(centered), ax, keepdims) + eps) * g + b;
  });
}

// RMS normalisation (T5, LLaMA): x / sqrt(mean(x²) + eps) * gamma.
template <expression X, class G, int A = -1>
auto rms_norm(X&& xs, G&& gamma, float eps = 1e-6f, axes_t<A> ax = {}) {
  auto g = detail::as_node(std::forward<G>(gamma));
  return detail::shared(std::forward<X>(xs), [ax, eps, g](const auto& x) { return x * rsqrt(mean(square(x), ax, keepdims) + eps) * g; });
}

// x / max(‖x‖₂, eps) along an axis.
template <expression X, int A = -1>
auto l2_normalize(X&& xs, float eps = 1e-12f, axes_t<A> ax = {}) {
  return detail::shared(std::forward<X>(xs), [ax, eps](const auto& x) { return x / maximum(norm(x, ax, keepdims), eps); });
}

namespace detail {
// A per-channel vector [C] laid along axis A of a rank-R tensor: [C, 1, ..., 1] (trailing ones), so
// that it broadcasts against [N, C, H, W] for A = 1 and against [N, H, W, C] for A = R - 1.
template <int R, int A, index_t C>
constexpr auto channel_dims() {
  dims_t<R - A> d{};
  for (auto& e : d) e = 1;
  d[0] = C;
  return d;
}
template <class S, int A, class V>
auto along_channels(V&& v) {
  constexpr int a = A < 0 ? A + S::rank : A;
  using In = shape_of_t<V>;
  using Out = shape_from<channel_dims<S::rank, a, In::dims[0]>()>;
  return apply_view<reshape_map<In, Out>>(as_node(std::forward<V>(v)));
}
template <class S, int A, class... V>
constexpr bool per_channel() {
  constexpr int a = A < 0 ? A + S::rank : A;
  return ((shape_of_t<V>::rank == 1 && shape_of_t<V>::dims[0] == S::dims[a]) && ...);
}
} // namespace detail

// Batch normalisation in its inference form: (x - running_mean) / sqrt(running_var + eps) * gamma + beta,
// per channel; the channel axis is 1 (NCHW, the default) or -1 (NHWC). One fused loop nest.
template <int A = 1, expression X, expression M, expression V, expression G, expression B>
auto batch_norm(X&& x, M&& running_mean, V&& running_var, G&& gamma, B&& beta, float eps = 1e-5f, axes_t<A> = {}) {
  using S = detail::shape_of_t<X>;
  static_assert(S::rank >= 2, "tenfold::batch_norm: the input needs a batch and a channel axis");
  constexpr bool ok = detail::per_channel<S, A, M, V, G, B>();
  static_assert(ok, "tenfold::batch_norm: the statistics and parameters must be vectors with one value per channel");
  if constexpr (!ok) return detail::invalid_view{};
  else {
    auto mean = detail::along_channels<S, A>(std::forward<M>(running_mean));
    auto scale = detail::along_channels<S, A>(std::forward<G>(gamma)) *
                 rsqrt(detail::along_channels<S, A>(std::forward<V>(running_var)) + eps);
    return (std::forward<X>(x) - mean) * scale + detail::along_channels<S, A>(std::forward<B>(beta));
  }
}

namespace detail {
// axes<every axis of a rank-R tensor but A>
template <int R, int A, std::size_t... I>
constexpr auto axes_but(std::index_sequence<I...>) {
  return axes<(int(I) < A ? int(I) : int(I) + 1)...>;
}
template <class S, int A>
inline constexpr auto other_axes = axes_but<S::rank, (A < 0 ? A + S::rank : A)>(std::make_index_sequence<std::size_t(S::rank - 1)>{});
} // namespace detail

// Batch normalisation in its training form: each channel normalised with the mean and the biased
// variance of its values over every other axis (the batch and the spatial positions), then scaled by
// gamma and shifted by beta. The running averages are the caller's state: batch_statistics gives the
// batch's mean and unbiased variance per channel (PyTorch: running = (1 - momentum) running + momentum
// batch, momentum 0.1).
template <int A = 1, expression X, expression G, expression B>
auto batch_norm_train(X&& xs, G&& gamma, B&& beta, float eps = 1e-5f, axes_t<A> = {}) {
  using S = detail::shape_of_t<X>;
  static_assert(S::rank >= 2, "tenfold::batch_norm_train: the input needs a batch and a channel axis");
  constexpr bool ok = detail::per_channel<S, A, G, B>();
  static_assert(ok, "tenfold::batch_norm_train: gamma and beta must be vectors with one value per channel");
  if constexpr (!ok) return detail::invalid_view{};
  else {
    auto g = detail::along_channels<S, A>(std::forward<G>(gamma));
    auto b = detail::along_channels<S, A>(std::forward<B>(beta));
    return detail::shared(std::forward<X>(xs), [g, b, eps](const auto& x) {
      constexpr auto ax = detail::other_axes<S, A>;
      auto centered = x - mean(x, ax, keepdims);
      return centered * rsqrt(mean(square(centered), ax, keepdims) + eps) * g + b;
    });
  }
}
// The batch mean and unbiased variance per channel ([C] each) that batch_norm_train normalises with.
template <int A = 1, expression X>
auto batch_statistics(const X& x, axes_t<A> = {}) {
  using S = detail::shape_of_t<X>;
  constexpr auto ax = detail::other_axes<S, A>;
  return std::pair{mean(x, ax), var(x, ax)};
}

namespace detail {
// one_hot(labels) for C classes, as a bool expression [.., C]: eq(labels[..., None], arange(C)).
template <index_t C, expression L>
auto one_hot_mask(L&& labels) {
  // Compared in float: exact for every class id below 2^24, and a label outside [0, C) matches none
  // either way; it keeps the mask in the float lanes of the tree it selects in (an int64 compare made
  // the whole nest scalar: the decoder's logit gradient, [768, 114], ran at 5.6 ns an element).
  static_assert(C <= (index_t(1) << 24), "tenfold: one-hot masks of more than 2^24 classes are not supported");
  return eq(cast<float>(unsqueeze<-1>(std::forward<L>(labels))), arange<float, C>());
}
} // namespace detail

// Mean negative log-likelihood of integer class labels [B] under log-probabilities [B, C].
template <expression LP, expression L>
auto nll_loss(LP&& log_probs, L&& labels) {
  constexpr index_t classes = detail::shape_of_t<LP>::dims[detail::shape_of_t<LP>::rank - 1];
  // -log p[label] per row, then the batch mean: the row sums are computed where the mean reads them.
  auto picked = sum(where(detail::one_hot_mask<classes>(std::forward<L>(labels)), std::forward<LP>(log_probs), 0.0f), axis<-1>);
  return mean(-picked);
}

// Cross-entropy of logits [B, C] against integer labels [B]: mean over the batch of
// logsumexp(logits) - logits[label], computed from log_softmax so it never overflows.
template <expression X, expression L>
auto cross_entropy(X&& logits, L&& labels) {
  return nll_loss(log_softmax(std::forward<X>(logits)), std::forward<L>(labels));
}

// Cross-entropy with label smoothing eps (PyTorch's label_smoothing): the target puts 1 - eps on the
// label and eps / C on every class, so the loss is (1 - eps) * nll + eps * mean over classes of -log p.
template <expression X, expression L>
auto cross_entropy(X&& logits, L&& labels, float label_smoothing) {
  auto lb = detail::as_node(std::forward<L>(labels));
  return detail::shared(log_softmax(std::forward<X>(logits)), [lb, label_smoothing](const auto& lp) {
    using S = detail::shape_of_t<decltype(lp)>;
    constexpr index_t classes = S::dims[S::rank - 1];
    auto picked = sum(where(detail::one_hot_mask<classes>(lb), lp, 0.0f), axis<-1>);
    return mean(-picked * (1.0f - label_smoothing) - sum(lp, axis<-1>) * (label_smoothing / float(classes)));
  });
}

// Binary cross-entropy of logits x against targets y in [0, 1], averaged:
// max(x, 0) - x y + log(1 + exp(-|x|)), which never overflows (PyTorch's BCEWithLogitsLoss).
template <expression X, expression Y>
auto binary_cross_entropy_with_logits(X&& logits, Y&& targets) {
  auto y = detail::as_node(std::forward<Y>(targets));
  return detail::shared(std::forward<X>(logits), [y](const auto& x) { return mean(maximum(x, 0.0f) - x * y + log1p(exp(-abs(x)))); });
}

template <expression A, expression B>
auto mse_loss(A&& a, B&& b) {
  return mean(square(std::forward<A>(a) - std::forward<B>(b)));
}
template <expression A, expression B>
auto l1_loss(A&& a, B&& b) {
  return mean(abs(std::forward<A>(a) - std::forward<B>(b)));
}
// KL(p ‖ q) from log q (`log_q`) and probabilities p (`p`), summed over all elements and divided by
// the batch (the first extent), as PyTorch's reduction='batchmean'. Terms with p = 0 contribute 0.
template <expression LQ, expression P>
auto kl_div(LQ&& log_q, P&& ps) {
  constexpr index_t batch = detail::shape_of_t<LQ>::rank > 0 ? detail::shape_of_t<LQ>::dims[0] : 1;
  auto lq = detail::as_node(std::forward<LQ>(log_q));
  return detail::shared(std::forward<P>(ps), [lq](const auto& p) { return sum(where(p > 0.0f, p * (log(p) - lq), 0.0f)) / float(batch); });
}

// Inverted dropout: keep each element with probability 1 - p and scale it by 1 / (1 - p). The mask
// comes from the counter-based generator, so it is the same on every backend and thread count.
template <expression X>
auto dropout(X&& x, float p, rng& g) {
  using S = detail::shape_of_t<X>;
  const float keep = 1.0f - p;
  return where(bernoulli<S>(g, keep), std::forward<X>(x) * (keep > 0 ? 1.0f / keep : 0.0f), 0.0f);
}
} // namespace tenfold
