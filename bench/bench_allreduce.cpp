// Allreduce bandwidth through tenfold's MPI communicator (dist/mpi.hpp), for issue 19's scaling model:
//   mpirun -np 2 build-bench/bench/tenfold_bench_allreduce
// For each size (floats) it times `reps` in-place sum allreduces after a warm-up and prints, on rank 0,
// the median time, the algorithm bandwidth (bytes / time) and the bus bandwidth (the bytes each rank
// moves in a ring allreduce: 2 (R - 1) / R x bytes, / time), as NCCL's tests report them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <tenfold/dist/mpi.hpp>

int main(int argc, char** argv) {
  tenfold::dist::mpi_communicator comm(argc, argv);
  const int R = comm.size();
  if (comm.is_root()) std::printf("ranks %d\n%12s %12s %14s %14s\n", R, "floats", "median us", "algbw GB/s", "busbw GB/s");
  for (std::size_t n : {std::size_t(256), std::size_t(4096), std::size_t(65536), std::size_t(206922), std::size_t(1) << 20,
                        std::size_t(1) << 22}) {
    std::vector<float> buf(n, 1.0f);
    const int reps = n <= 65536 ? 200 : 30;
    for (int i = 0; i < 5; ++i) comm.allreduce(buf);
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      comm.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      comm.allreduce(buf);
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
    const double s = t[std::size_t(reps / 2)], bytes = double(n) * sizeof(float);
    if (comm.is_root())
      std::printf("%12zu %12.1f %14.3f %14.3f\n", n, s * 1e6, bytes / s / 1e9, 2.0 * (R - 1) / R * bytes / s / 1e9);
  }
}
