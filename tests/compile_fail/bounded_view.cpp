// A slice of the bounded axis of a tensor with an upto<N> extent drops the bound: refused (not supported
// yet). (A permutation keeps it: the control.)
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<upto<8>, 8>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<8, upto<8>>> b = transpose(a);
#else
  Tensor<float, shape<4, 8>> b = slice<range<0, 4>, whole>(a);
#endif
  (void)b;
}
