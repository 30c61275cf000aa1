// stack needs operands of one shape.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<2, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<2, 3>> b;
#else
  Tensor<float, shape<3, 2>> b;
#endif
  auto s = stack<0>(a, b);
  (void)s;
}
