// Rank-2 operands have no axis 2.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<2, 3>> a, b;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto c = concat<-1>(a, b);
#else
  auto c = concat<2>(a, b);
#endif
  (void)c;
}
