// [upto 8, 3] + [8, 3]: a bounded extent meets a static one other than 1.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<upto<8>, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<1, 3>> b;
#else
  Tensor<float, shape<8, 3>> b;
#endif
  Tensor<float, shape<upto<8>, 3>> c = a + b;
  (void)c;
}
