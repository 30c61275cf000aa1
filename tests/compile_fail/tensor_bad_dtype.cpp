// char is not a tenfold element type.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<std::int32_t, shape<2>> t;
#else
  Tensor<char, shape<2>> t;
#endif
  (void)t;
}
