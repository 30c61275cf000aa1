// A matmul whose inner dimension is an upto<N> extent (not supported yet): refused by name at compile time.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<8, 4>> x;
  Tensor<float, shape<upto<4>, 5>> w;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<float, shape<upto<4>, 5>> y = w * 2.f;
#else
  Tensor<float, shape<8, 5>> y = matmul(x, w);
#endif
  (void)y;
}
