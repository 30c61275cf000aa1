// A reduction entry of one's own without merge (how two partial results join): tenfold::reduce says so.
#include <tenfold/tenfold.hpp>
struct sum_squares : tenfold::ops::reduction<sum_squares, tenfold::ops::reduce_result::wide> {
  static constexpr std::string_view name = "sum_squares";
  template <class A> TENFOLD_HD static constexpr A identity() { return A(0); }
  template <class A, class X> TENFOLD_HD static A combine(A acc, X x, tenfold::index_t) { return acc + A(x) * A(x); }
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  template <class A> TENFOLD_HD static A merge(A a, A b) { return a + b; }
#endif
  template <class A> TENFOLD_HD static A finalize(A a, tenfold::index_t) { return a; }
};
int main() {
  tenfold::Tensor<float, tenfold::shape<4, 3>> t{};
  tenfold::Tensor<float, tenfold::shape<4>> r = tenfold::reduce<sum_squares>(t, tenfold::axis<1>);
  (void)r;
}
