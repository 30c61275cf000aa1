// The op table's benchmarks: every entry of ops/table.hpp at 4 KiB and 1 MiB of f32, registered by
// walking the op lists (bench_ops.hpp). Adding an entry to the table adds its benchmarks.
#include "bench_ops.hpp"

void tenfold_bench::register_reductions() {
  tf::ops::reduction_ops::for_each([]<class Op>() {
    register_reduction<Op, small_elems>();
    register_reduction<Op, large_elems>();
  });
}

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("tenfold_threads", std::to_string(tenfold::cpu::thread_pool::instance().size()));
  tenfold_bench::register_unary();
  tenfold_bench::register_binary_ternary();
  tenfold_bench::register_reductions();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
