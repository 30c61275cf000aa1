// Only one extent may be inferred.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto r = reshape<2, -1>(a);
#else
  auto r = reshape<-1, -1>(a);
#endif
  (void)r;
}
