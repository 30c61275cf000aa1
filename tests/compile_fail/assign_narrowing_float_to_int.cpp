// Assigning a float expression to an int32 tensor narrows: it needs tenfold::cast.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4>> x;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<std::int32_t, shape<4>> y = cast<std::int32_t>(x * 2.0f);
#else
  Tensor<std::int32_t, shape<4>> y = x * 2.0f;
#endif
  (void)y;
}
