// tenfold quickstart: static shapes, lazy fused expressions, reductions, views and random numbers.
#include <cstdio>
#include <tenfold/tenfold.hpp>

using namespace tenfold;

int main() {
  // A batch of 4 rows of 8 logits, drawn from a counter-based generator: the same on any machine.
  rng gen(2024);
  Tensor<float, shape<4, 8>> logits = normal<shape<4, 8>>(gen);
  Tensor<float, shape<8>> bias = linspace<float, 8>(-1, 1);

  // One fused loop: nothing is materialised between the ops.
  Tensor<float, shape<4, 8>> act = gelu(logits + bias) * 0.5f;

  // Reductions over an axis, keeping it so that the result broadcasts back (a softmax by hand).
  Tensor<float, shape<4, 1>> row_max = max(act, axis<1>, keepdims);
  Tensor<float, shape<4, 8>> e = exp(act - row_max);
  Tensor<float, shape<4, 1>> denom = sum(e, axis<-1>, keepdims);
  Tensor<float, shape<4, 8>> probs = e / denom;

  // Views cost nothing: the transpose below is an index map, read in place.
  Tensor<float, shape<8, 4>> probs_t = transpose(probs);
  Tensor<std::int64_t, shape<4>> best = argmax(probs, axis<1>);

  std::printf("tenfold quickstart\n");
  for (int i = 0; i < 4; ++i) {
    std::printf("row %d: argmax %lld  p = %.4f  row sum = %.6f\n", i, static_cast<long long>(best(i)),
                static_cast<double>(probs(i, best(i))), static_cast<double>(Tensor<float>(sum(slice<range<0, 8>>(probs_t))).data()[0] / 4));
  }
  Tensor<float> total = sum(probs);
  std::printf("sum of all probabilities: %.6f (expect 4)\n", static_cast<double>(total()));
  return total() > 3.999f && total() < 4.001f ? 0 : 1;
}
