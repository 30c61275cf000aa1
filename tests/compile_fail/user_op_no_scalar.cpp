// An op entry of one's own without a scalar function: tenfold::apply says what is missing.
#include <tenfold/tenfold.hpp>
struct softsign : tenfold::ops::unary<softsign> {
  static constexpr std::string_view name = "softsign";
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  template <class T> TENFOLD_HD static T scalar(T x) { return x / (T(1) + std::fabs(x)); }
#endif
  template <class B> static B simd(const B& x) { return x / (B(1) + xsimd::abs(x)); }
};
int main() {
  tenfold::Tensor<float, tenfold::shape<3>> t{};
  tenfold::Tensor<float, tenfold::shape<3>> r = tenfold::apply<softsign>(t);
  (void)r;
}
