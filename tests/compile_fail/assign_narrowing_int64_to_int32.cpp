// Assigning an int64 expression (a sum widens to int64) to an int32 tensor narrows: it needs tenfold::cast.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<std::int32_t, shape<4, 3>> x;
  Tensor<std::int32_t, shape<4>> y;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  y = cast<std::int32_t>(sum(x, axis<1>));
#else
  y = sum(x, axis<1>);
#endif
}
