// NumPy has no bfloat16: save_npy refuses a bf16 tensor rather than write a file NumPy cannot read.
#include <tenfold/io/npy.hpp>
using namespace tenfold;
int main() {
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<f16, shape<2>> t;
#else
  Tensor<bf16, shape<2>> t;
#endif
  io::save_npy("x.npy", t);
}
