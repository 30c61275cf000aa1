// A transpose of a tensor with an upto<N> extent drops the bound: refused (not supported yet).
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<upto<8>, 8>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<upto<8>, 8>> b = a + 1.f;
#else
  Tensor<float, shape<8, 8>> b = transpose(a);
#endif
  (void)b;
}
