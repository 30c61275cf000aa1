// A step's statement reads a slot before any statement has written it.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> x, y;
  slot<float, shape<4, 3>, struct a_> a;
  slot<float, shape<4, 3>, struct b_> b;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto s = statements(assign(a, x * 2.0f), assign(b, exp(a)), assign(y, a + b));
#else
  auto s = statements(assign(b, exp(a)), assign(a, x * 2.0f), assign(y, a + b));
#endif
  alignas(64) static std::byte arena[step_plan<decltype(s)>::bytes];
  run_step(s, arena);
}
