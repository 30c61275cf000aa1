// Pooling padding larger than half the kernel (PyTorch refuses it too).
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<2, 8, 8, 4>> x;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<2, 4, 5, 4>> y = avg_pool2d<hw{3, 2}, 2, hw{1, 1}>(x, nhwc);
#else
  auto y = avg_pool2d<hw{3, 2}, 2, hw{1, 2}>(x, nhwc);
#endif
  (void)y;
}
