// A rank-2 pad takes four values.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto p = pad<1, 1, 0, 1>(a, 0.0f);
#else
  auto p = pad<1, 1, 0>(a, 0.0f);
#endif
  (void)p;
}
