// Every reduction of the op table over each of the 16 axis subsets of a rank-4 tensor, element by element
// against the entry's long-double reference; without keepdims here, with it in ops_reduce_keepdims_test.
#include "reduce_test_support.hpp"

using namespace tenfold;
using namespace tenfold::test;

TEST_CASE("reductions over every axis subset of a rank-4 tensor", "[ops][reduce][axes]") {
  ops::reduction_ops::for_each([]<class Op>() { axis_subsets<Op, false>(); });
}

TEST_CASE("an empty axis list reduces every axis, negative axes count from the end", "[ops][reduce][axes]") {
  Tensor<float, rank4_shape> x;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : x) v = u(rng);
  Tensor<float, shape<>> all = sum(x, axes<>), all15 = reduce_mask<ops::sum, 15, false>(x);
  CHECK(all() == all15());
  Tensor<float, shape<3, 4>> neg = sum(x, axes<-1, -3>), pos = sum(x, axes<1, 3>);
  for (index_t i = 0; i < 12; ++i) CHECK(neg.data()[i] == pos.data()[i]);
}
