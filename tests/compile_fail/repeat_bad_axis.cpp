// Rank-2 operand: axis -3 does not exist.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto r = repeat<2, -2>(a);
#else
  auto r = repeat<2, -3>(a);
#endif
  (void)r;
}
