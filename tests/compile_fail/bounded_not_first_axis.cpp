// upto<N> on an axis other than the first (not supported yet).
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<upto<8>, 3>> a;
#else
  Tensor<float, shape<3, upto<8>>> a;
#endif
  (void)a;
}
