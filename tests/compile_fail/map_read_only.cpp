// A map made from a const pointer is read-only.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  float out[4] = {};
  const float* p = out;
  Tensor<float, shape<4>> x;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto m = map<float, shape<4>>(out);
#else
  auto m = map<float, shape<4>>(p);
#endif
  m = exp(x);
}
