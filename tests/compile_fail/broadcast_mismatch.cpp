// [4,3] + [2,3]: the error names the rule and both shapes.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<1, 3>> b;
#else
  Tensor<float, shape<2, 3>> b;
#endif
  Tensor<float, shape<4, 3>> c = a + b;
  (void)c;
}
