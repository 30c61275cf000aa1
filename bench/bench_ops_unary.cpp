// Benchmarks for every unary entry of the op table (see bench_ops.hpp).
#include "bench_ops.hpp"

void tenfold_bench::register_unary() { register_elementwise_list<tf::ops::unary_ops>(); }
