// A reduction that keeps a bounded innermost axis while it reduces another (not supported yet): refused
// by name. (Over that axis: the control.)
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<3, upto<8>>> x;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<3>> y = sum(x, axis<1>);
#else
  Tensor<float, shape<upto<8>>> y = sum(x, axis<0>);
#endif
  (void)y;
}
