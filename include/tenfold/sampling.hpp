#pragma once
// Drawing the next token from a row of logits: temperature, top-k and top-p (nucleus) filtering, then
// one draw from Philox at a counter the caller names, so that a seed gives the same text on every run
// and every thread count. The filters apply in Hugging Face transformers' order and with its rules:
//   temperature  logits / t; t = 0 is greedy (the first largest logit)
//   top_k        keeps the k largest (and every logit equal to the k-th: ties are not broken); 0 keeps all
//   top_p        keeps, in decreasing probability, each token whose more probable tokens hold less than p
//                of the mass (so the token that crosses p is kept, and always at least one); 1 keeps all
// A `sampler` owns its working memory, sized once for the vocabulary: drawing allocates nothing (the
// decode loop's promise). Bad arguments and logits (NaN, nothing finite) are a tenfold::error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tenfold/core/error.hpp"
#include "tenfold/core/philox.hpp"

namespace tenfold {

struct sampling {
  float temperature = 1.0f;
  int top_k = 0;
  float top_p = 1.0f;
};

class sampler {
 public:
  explicit sampler(index_t vocabulary) : order_(std::size_t(vocabulary)), prob_(std::size_t(vocabulary)) {
    if (vocabulary < 1) throw error("tenfold::sampler: the vocabulary must hold at least one token");
  }
  index_t vocabulary() const noexcept { return index_t(order_.size()); }

  // The filtered distribution: probs[i] is token i's probability after the filters (0 where removed).
  void probabilities(std::span<const float> logits, const sampling& s, std::span<double> probs) {
    if (probs.size() != order_.size()) throw error(message("probabilities: the output holds ", probs.size(), " values, not ", order_.size()));
    const std::size_t kept = filter(logits, s);
    std::fill(probs.begin(), probs.end(), 0.0);
    for (std::size_t r = 0; r < kept; ++r) probs[std::size_t(order_[r])] = prob_[r];
  }

  // One token, drawn with the uniform number Philox gives for (seed, offset) (element 0 of that draw).
  index_t operator()(std::span<const float> logits, const sampling& s, philox_stream at) {
    const std::size_t kept = filter(logits, s);
    if (kept == 1) return order_[0];
    const double u = detail::uniform_at<double>(at.seed, at.offset, 0, 0.0, 1.0);
    double c = 0;
    for (std::size_t r = 0; r + 1 < kept; ++r)
      if (u < (c += prob_[r])) return order_[r];
    return order_[kept - 1];
  }
  // The same with the next counter of `g` (one per token).
  index_t operator()(std::span<const float> logits, const sampling& s, rng& g) { return (*this)(logits, s, g.reserve(1)); }

 private:
  template <class... A>
  static std::string message(const A&... a) {
    return detail::message("tenfold::sampler: ", a...);
  }
  static std::string number(double x) { // shortest form: "1.5", "-1", "nan"
    char b[32];
    std::snprintf(b, sizeof b, "%g", x);
    return b;
  }

  // Leaves the kept tokens in order_[0, kept) by decreasing logit and their renormalised probabilities
  // in prob_; returns kept. Among equal logits the higher index comes first, as transformers' stable
  // ascending sort ranks them (which of two tied tokens top_p keeps is otherwise unspecified there).
  std::size_t filter(std::span<const float> logits, const sampling& s) {
    const std::size_t n = order_.size();
    if (logits.size() != n) throw error(message("the logits hold ", logits.size(), " values, the vocabulary ", n));
    if (!(s.temperature >= 0) || !std::isfinite(s.temperature)) throw error(message("temperature ", number(s.temperature), " is not a finite value >= 0"));
    if (s.top_k < 0) throw error(message("top_k ", s.top_k, " is negative"));
    if (!(s.top_p > 0 && s.top_p <= 1)) throw error(message("top_p ", number(s.top_p), " is not in (0, 1]"));
    bool any = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isnan(logits[i])) throw error(message("logit ", i, " is NaN"));
      any = any || logits[i] > -std::numeric_limits<float>::infinity();
    }
    if (!any) throw error(message("every logit is -inf: no token can be drawn"));
    for (std::size_t i = 0; i < n; ++i) order_[i] = index_t(i);
    const auto before = [&](index_t a, index_t b) { return logits[std::size_t(a)] > logits[std::size_t(b)] || (logits[std::size_t(a)] == logits[std::size_t(b)] && a > b); };
    if (s.temperature == 0) { // greedy: the first largest, as argmax
      order_[0] = index_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
      prob_[0] = 1;
      return 1;
    }
    std::size_t kept = n;
    if (s.top_k > 0 && std::size_t(s.top_k) < n) {
      std::nth_element(order_.begin(), order_.begin() + s.top_k - 1, order_.end(), before);
      const float kth = logits[std::size_t(order_[std::size_t(s.top_k - 1)])];
      kept = std::size_t(std::partition(order_.begin(), order_.end(), [&](index_t i) { return logits[std::size_t(i)] >= kth; }) - order_.begin());
    }
    std::sort(order_.begin(), order_.begin() + std::ptrdiff_t(kept), before);
    // softmax of logits / t over the kept tokens (in double; the largest first, so exp(0) = 1 leads)
    const double top = double(logits[std::size_t(order_[0])]), t = s.temperature;
    double z = 0;
    for (std::size_t r = 0; r < kept; ++r) z += (prob_[r] = std::exp((double(logits[std::size_t(order_[r])]) - top) / t));
    for (std::size_t r = 0; r < kept; ++r) prob_[r] /= z;
    while (kept > 1 && prob_[kept - 1] == 0) --kept; // (-inf logits, and underflow)
    if (s.top_p < 1) {
      double above = 0;
      std::size_t r = 0;
      while (r < kept && above < double(s.top_p)) above += prob_[r++];
      kept = std::max<std::size_t>(r, 1);
      double mass = 0;
      for (std::size_t q = 0; q < kept; ++q) mass += prob_[q];
      for (std::size_t q = 0; q < kept; ++q) prob_[q] /= mass;
    }
    return kept;
  }

  std::vector<index_t> order_;
  std::vector<double> prob_;
};
} // namespace tenfold
