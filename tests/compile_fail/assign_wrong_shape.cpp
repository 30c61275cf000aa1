// Assigning a [4,3] expression to a [3,4] tensor.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<3, 4>> b = transpose(a * 2.0f);
#else
  Tensor<float, shape<3, 4>> b = a * 2.0f;
#endif
  (void)b;
}
