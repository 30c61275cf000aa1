// [2,3] cannot be broadcast to [3,3].
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<2, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto b = broadcast_to<shape<4, 2, 3>>(a);
#else
  auto b = broadcast_to<shape<3, 3>>(a);
#endif
  (void)b;
}
