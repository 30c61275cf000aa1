// A pooling kernel larger than the padded input: 3x3 dilated by 4 spans 9 rows of a 6x6 image.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<1, 3, 6, 6>> x;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<1, 3, 2, 2>> y = max_pool2d<3, 1, 0, 2>(x);
#else
  auto y = max_pool2d<3, 1, 0, 4>(x);
#endif
  (void)y;
}
