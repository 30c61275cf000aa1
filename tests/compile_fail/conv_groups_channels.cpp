// conv2d: the input channels (6 here) must be divisible by groups.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<1, 6, 8, 8>> x;
  Tensor<float, shape<6, 2, 3, 3>> w; // [OC, C / groups, KH, KW]
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<1, 6, 8, 8>> y = conv2d(x, w, padding<1>, groups<3>);
#else
  Tensor<float, shape<1, 6, 8, 8>> y = conv2d(x, w, padding<1>, groups<4>);
#endif
  (void)y;
}
