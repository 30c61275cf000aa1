// rope(x, cos, sin): the feature extent D of x [..., T, D] must be even (dimension i pairs with i + D/2).
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<2, 5, 6>> x;
  rope_tables<float, 5, 6> t;
  Tensor<float, shape<2, 5, 6>> y = rope(x, t.cos, t.sin);
#else
  Tensor<float, shape<2, 5, 7>> x;
  Tensor<float, shape<5, 7>> c, s;
  Tensor<float, shape<2, 5, 7>> y = rope(x, c, s);
#endif
  (void)y;
}
