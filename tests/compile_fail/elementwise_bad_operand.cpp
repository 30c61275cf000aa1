// A std::string is not an operand of an elementwise op: tenfold::apply, which clamp calls, says so (its note
// names ops::clamp, then clamp).
#include <string>
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<3>> t{};
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<3>> r = clamp(t, -1.0f, 1.0f);
#else
  Tensor<float, shape<3>> r = clamp(t, std::string("lo"), 1.0f);
#endif
  (void)r;
}
