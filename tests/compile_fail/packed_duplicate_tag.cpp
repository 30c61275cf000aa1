// Two members of a packed layout named by one tag.
#include <tenfold/tenfold.hpp>
using namespace tenfold;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
using grads = packed<float, group<member<shape<4, 3>, struct w_>>, group<member<shape<3>, struct b_>>>;
#else
using grads = packed<float, group<member<shape<4, 3>, struct w_>>, group<member<shape<3>, struct w_>>>;
#endif
int main() {
  grads g;
  (void)g;
}
