// Consumer that builds tenfold as part of its own tree (add_subdirectory): a dot product and a
// row-sum of a fused elementwise expression must match the closed forms. Returns non-zero if not.
#include <cstdio>
#include <tenfold/tenfold.hpp>

int main() {
  using namespace tenfold;
  Tensor<double, shape<4>> a = arange<double, 4>(1); // 1 2 3 4
  Tensor<double> dot = sum(a * a);                   // 1 + 4 + 9 + 16
  Tensor<std::int64_t, shape<3, 4>> m{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  Tensor<std::int64_t, shape<3>> rows = sum(m * 2 + 1, axis<1>); // 2 * (4r..4r+3) + 4
  if (dot() != 30.0 || rows(0) != 16 || rows(1) != 48 || rows(2) != 80) {
    std::fprintf(stderr, "dot = %g, rows = %lld %lld %lld; expected 30, 16 48 80\n", dot(), (long long)rows(0),
                 (long long)rows(1), (long long)rows(2));
    return 1;
  }
  std::printf("add_subdirectory consumer: ok\n");
  return 0;
}
