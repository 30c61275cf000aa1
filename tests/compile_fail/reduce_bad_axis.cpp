// sum over axis 2 of a rank-2 tensor.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<4>> s = sum(a, axis<-1>);
#else
  Tensor<float, shape<4>> s = sum(a, axis<2>);
#endif
  (void)s;
}
