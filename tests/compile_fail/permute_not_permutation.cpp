// <0, 0> is not a permutation of the two axes.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto p = permute<1, 0>(a);
#else
  auto p = permute<0, 0>(a);
#endif
  (void)p;
}
