// A step whose kept slots have two element types (its buckets would not be spans of one type).
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> x;
  slot<float, shape<4, 3>, kept<struct g_>> g;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  slot<float, shape<4, 3>, kept<struct h_>> h;
#else
  slot<double, shape<4, 3>, kept<struct h_>> h;
#endif
  auto s = statements(assign(g, x * 2.0f), assign(h, x));
  alignas(64) static std::byte arena[step_plan<decltype(s)>::bytes];
  run_step(s, arena);
}
