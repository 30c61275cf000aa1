// Consumer of an installed tenfold, found with find_package(tenfold CONFIG): a softmax written with
// broadcast reductions must give the known probabilities. Returns non-zero if it does not.
#include <cmath>
#include <cstdio>
#include <tenfold/tenfold.hpp>

int main() {
  using namespace tenfold;
  Tensor<float, shape<2, 3>> x{1, 2, 3, -1, 0, 1};
  Tensor<float, shape<2, 1>> row_max = max(x, axis<1>, keepdims);
  Tensor<float, shape<2, 3>> e = exp(x - row_max);
  Tensor<float, shape<2, 1>> denom = sum(e, axis<1>, keepdims);
  Tensor<float, shape<2, 3>> p = e / denom;
  // softmax is shift-invariant, so both rows equal softmax([0, 1, 2]).
  const double expected[3] = {0.0900305732, 0.2447284711, 0.6652409558};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      if (std::fabs(p(i, j) - expected[j]) > 1e-6) {
        std::fprintf(stderr, "softmax(%d,%d) = %.9f, expected %.9f\n", i, j, double(p(i, j)), expected[j]);
        return 1;
      }
  std::printf("find_package consumer: ok\n");
  return 0;
}
