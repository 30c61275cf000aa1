// Reading a slot that is not kept after its step: its place is shared with other values.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> x, y;
  slot<float, shape<4, 3>, struct a_> a;
  slot<float, shape<4, 3>, kept<struct g_>> g;
  auto s = statements(assign(a, x * 2.0f), assign(g, a + 1.0f), assign(y, a));
  using P = step_plan<decltype(s)>;
  alignas(64) static std::byte arena[P::bytes];
  run_step(s, arena);
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  auto m = P::kept(arena, g);
#else
  auto m = P::kept(arena, a);
#endif
  (void)m;
}
