// Axis 0 has extent 4, so it cannot be squeezed.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 1>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto s = squeeze<1>(a);
#else
  auto s = squeeze<0>(a);
#endif
  (void)s;
}
