// Benchmarks for every binary and ternary entry of the op table (see bench_ops.hpp).
#include "bench_ops.hpp"

void tenfold_bench::register_binary_ternary() {
  register_elementwise_list<tf::ops::binary_ops>();
  register_elementwise_list<tf::ops::ternary_ops>();
}
