// attention(q, k, v, key_lengths(lens)): one length per element of the output's first axis.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<2, 3, 5, 8>> q, k, v;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<std::int32_t, shape<2>> lens{5, 3};
#else
  Tensor<std::int32_t, shape<3>> lens{5, 3, 1};
#endif
  Tensor<float, shape<2, 3, 5, 8>> y = attention(q, k, v, key_lengths(lens));
  (void)y;
}
