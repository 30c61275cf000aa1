// Along axis 0 the other extents (3 and 4) must agree.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<2, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<5, 3>> b;
#else
  Tensor<float, shape<5, 4>> b;
#endif
  auto c = concat<0>(a, b);
  (void)c;
}
