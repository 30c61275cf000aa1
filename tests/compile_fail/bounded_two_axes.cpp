// Two upto<N> extents in one shape (not supported yet).
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<3, upto<8>>> a;
#else
  Tensor<float, shape<upto<3>, upto<8>>> a;
#endif
  (void)a;
}
