// An op entry whose simd function is not one for xsimd batches (here written for scalars): tenfold::apply
// says so, and names the operating type in its note.
#include <tenfold/tenfold.hpp>
struct softsign : tenfold::ops::unary<softsign> {
  static constexpr std::string_view name = "softsign";
  template <class T> TENFOLD_HD static T scalar(T x) { return x / (T(1) + std::fabs(x)); }
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  template <class B> static B simd(const B& x) { return x / (B(1) + xsimd::abs(x)); }
#else
  static float simd(float x) { return x / (1 + std::fabs(x)); }
#endif
};
int main() {
  tenfold::Tensor<float, tenfold::shape<3>> t{};
  tenfold::Tensor<float, tenfold::shape<3>> r = tenfold::apply<softsign>(t);
  (void)r;
}
