// A rank-2 tensor needs two indices.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  return int(a(1, 2));
#else
  return int(a(1));
#endif
}
