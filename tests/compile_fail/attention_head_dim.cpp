// attention(q, k, v): q and k must have the same head dimension (their last extent).
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<2, 5, 8>> q;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<2, 7, 8>> k;
#else
  Tensor<float, shape<2, 7, 6>> k;
#endif
  Tensor<float, shape<2, 7, 4>> v;
  Tensor<float, shape<2, 5, 4>> y = attention(q, k, v);
  (void)y;
}
