// The epilogues of one product, together(...), read the product's operands where they lie: a product of
// an expression (x * 2) needs a temporary, for which eval(together(...)) has no arena.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<16, 8>> x;
  Tensor<float, shape<8, 16>> w;
  Tensor<float, shape<16, 16>> a, b;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  eval(together(assign(a, gelu_tanh(matmul(x, w))), assign(b, matmul(x, w) + 1.0f)));
#else
  eval(together(assign(a, gelu_tanh(matmul(x * 2.0f, w))), assign(b, matmul(x * 2.0f, w) + 1.0f)));
#endif
}
