// together(...) runs elementwise assignments as one pass, or reductions of elementwise values block by
// block: a value that is neither (an elementwise op over a reduction) cannot be part of it.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> a, b;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  eval(together(assign(a, b * 2.0f), assign(b, a + 1.0f)));
#else
  eval(together(assign(a, b * 2.0f), assign(b, a - mean(a, axis<0>))));
#endif
}
