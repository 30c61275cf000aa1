// Padding cannot be negative.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto p = pad<1, 1, 0, 1>(a);
#else
  auto p = pad<1, -1, 0, 1>(a);
#endif
  (void)p;
}
