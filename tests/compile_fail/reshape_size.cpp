// 12 elements cannot become [5,2].
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto r = reshape<6, 2>(a);
#else
  auto r = reshape<5, 2>(a);
#endif
  (void)r;
}
