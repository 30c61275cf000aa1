// axes<0, -2> names axis 0 twice.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<>> s = sum(a, axes<0, -1>);
#else
  Tensor<float, shape<>> s = sum(a, axes<0, -2>);
#endif
  (void)s;
}
