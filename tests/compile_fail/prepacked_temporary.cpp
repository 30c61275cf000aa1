// A Prepacked weight is read in place by the expression: a temporary one would be gone before it runs.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> x;
  Tensor<float, shape<5, 3>> w;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  const Prepacked<float, shape<5, 3>> wp = w;
  Tensor<float, shape<4, 5>> y = matmul(x, transpose(wp));
#else
  Tensor<float, shape<4, 5>> y = matmul(x, transpose(Prepacked<float, shape<5, 3>>(w)));
#endif
  (void)y;
}
