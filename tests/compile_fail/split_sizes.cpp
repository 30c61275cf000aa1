// 1 + 2 is not the extent (4) of axis 0.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto [x, y] = split<0, 1, 3>(a);
#else
  auto [x, y] = split<0, 1, 2>(a);
#endif
  (void)x;
  (void)y;
}
