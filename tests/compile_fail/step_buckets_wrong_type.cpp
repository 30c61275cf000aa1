// Buckets of a step's kept slots handed over as spans of another element type.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> x;
  slot<float, shape<4, 3>, kept<struct g_>> g;
  auto s = statements(assign(g, x * 2.0f));
  alignas(64) static std::byte arena[step_plan<decltype(s)>::bytes];
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  run_step(s, arena, on_buckets<float, 64>([](int, std::span<float>) {}));
#else
  run_step(s, arena, on_buckets<double, 64>([](int, std::span<double>) {}));
#endif
}
