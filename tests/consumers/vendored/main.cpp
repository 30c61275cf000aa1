// Consumer that vendors tenfold: include/ copied into the tree, no tenfold CMake, only the include
// paths of tenfold, xsimd and Boost (Hana). Mean, argmax and a view must give the known values.
#include <cstdio>
#include <tenfold/tenfold.hpp>

int main() {
  using namespace tenfold;
  Tensor<float, shape<5>> x = linspace<float, 5>(0, 1); // 0 .25 .5 .75 1
  Tensor<float> m = mean(x);
  Tensor<float, shape<2, 3>> y{3, 9, 1, 4, 2, 8};
  Tensor<std::int64_t, shape<2>> best = argmax(y, axis<1>);
  Tensor<float, shape<3, 2>> yt = transpose(y);
  if (m() != 0.5f || best(0) != 1 || best(1) != 2 || yt(1, 0) != 9 || yt(2, 1) != 8) {
    std::fprintf(stderr, "mean = %g, argmax = %lld %lld, transpose(1,0) = %g; expected 0.5, 1 2, 9\n", double(m()),
                 (long long)best(0), (long long)best(1), double(yt(1, 0)));
    return 1;
  }
  std::printf("vendored consumer: ok\n");
  return 0;
}
