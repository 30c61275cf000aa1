// A vector against a matrix whose rows are of another length: the error says which extents must agree.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<4>> v{};
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<4, 2>> m{};
#else
  Tensor<float, shape<5, 2>> m{};
#endif
  Tensor<float, shape<2>> y = matmul(v, m);
  (void)y;
}
