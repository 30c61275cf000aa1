// A packed layout asked for a member it does not have.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
using grads = packed<float, group<member<shape<4, 3>, struct w_>, member<shape<3>, struct b_>>>;
int main() {
  grads g;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  g.get<b_>() = full<float, shape<3>>(1.0f);
#else
  g.get<struct bias_>() = full<float, shape<3>>(1.0f);
#endif
}
