// take with indices computed by an expression: they must be a tensor (checked before the nest runs).
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<10, 4>> table;
  Tensor<std::int32_t, shape<3>> ids;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<3, 4>> e = take<0>(table, ids);
#else
  Tensor<float, shape<3, 4>> e = take<0>(table, ids + 1);
#endif
  (void)e;
}
