// Bitwise ops take integer or bool tensors: & of two float tensors is refused, naming the ops.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<std::int32_t, shape<4>> a{}, b{};
  Tensor<std::int32_t, shape<4>> c = a & b;
#else
  Tensor<float, shape<4>> a{}, b{};
  Tensor<float, shape<4>> c = a & b;
#endif
  (void)c;
}
