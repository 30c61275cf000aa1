// batch_norm's statistics and parameters have one value per channel (axis 1 here: 3 channels).
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<2, 3, 4, 4>> x;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<3>> m, v, g, b;
#else
  Tensor<float, shape<4>> m, v, g, b;
#endif
  Tensor<float, shape<2, 3, 4, 4>> y = batch_norm(x, m, v, g, b);
  (void)y;
}
