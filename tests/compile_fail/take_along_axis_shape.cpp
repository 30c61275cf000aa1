// take_along_axis with indices wider than the source on another axis: the error names both shapes.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4, 3>> x;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<std::int64_t, shape<4, 2>> idx;
  Tensor<float, shape<4, 2>> y = take_along_axis<1>(x, idx);
#else
  Tensor<std::int64_t, shape<5, 2>> idx;
  Tensor<float, shape<5, 2>> y = take_along_axis<1>(x, idx);
#endif
  (void)y;
}
