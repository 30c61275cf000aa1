// embedding with float ids: the error says the indices must be int32 or int64.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
int main() {
  Tensor<float, shape<10, 4>> table;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  Tensor<std::int32_t, shape<3>> ids;
#else
  Tensor<float, shape<3>> ids;
#endif
  Tensor<float, shape<3, 4>> e = embedding(table, ids);
  (void)e;
}
