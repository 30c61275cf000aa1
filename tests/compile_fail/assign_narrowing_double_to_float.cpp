// Writing a double expression through a float map narrows: it needs tenfold::cast.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  float out[4] = {};
  Tensor<double, shape<4>> x;
  auto m = map<float, shape<4>>(out);
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  m = cast<float>(x + 1.0);
#else
  m = x + 1.0;
#endif
}
