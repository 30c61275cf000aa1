// A program's state update narrows like any assignment: a float expression into int32 state needs
// tenfold::cast.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
struct counter {
  Tensor<std::int32_t, shape<4>>* steps;
  auto forward(const Tensor<float, shape<4>>& x) const {
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
    return sequence(update(*steps, cast<std::int32_t>(x * 2.0f)), x + 1.0f);
#else
    return sequence(update(*steps, x * 2.0f), x + 1.0f);
#endif
  }
};
int main() {
  Tensor<std::int32_t, shape<4>> steps;
  counter m{&steps};
  using prog = program<const counter, Tensor<float, shape<4>>>;
  alignas(64) static std::byte arena[prog::arena_bytes > 0 ? prog::arena_bytes : 1];
  prog run(m, arena);
  Tensor<float, shape<4>> x, y;
  run(y, x);
}
