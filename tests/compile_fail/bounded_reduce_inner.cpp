// A reduction over an upto<N> axis other than the first (not supported yet): refused by name.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<3, upto<8>, 4>> x;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<3, upto<8>>> y = sum(x, axis<-1>);
#else
  Tensor<float, shape<3, 4>> y = sum(x, axis<1>);
#endif
  (void)y;
}
