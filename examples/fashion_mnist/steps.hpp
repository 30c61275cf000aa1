#pragma once
// The training steps the example runs: trainer<B>::run and the two steps (plain and ZeRO-1 Adam) for its communicator,
// compiled in step_64.cpp (one process) and step_32.cpp (a rank's shard), not in main.cpp. They are most of the
// example's compile time, and as two files they build in parallel.
#include <tenfold/dist/communicator.hpp>
#ifdef FASHION_MNIST_MPI
#include <tenfold/dist/mpi.hpp>
#endif

#include "cnn.hpp"

namespace fashion {
#ifdef FASHION_MNIST_MPI
using communicator = tenfold::dist::mpi_communicator;
#else
using communicator = tenfold::dist::single_process;
#endif

#define FASHION_MNIST_STEP(B)                                                                                          \
  void trainer<B>::run<communicator>(parameters&, const Tensor<float, shape<B, 28, 28, 1>>&,                           \
                                     const Tensor<std::int64_t, shape<B>>&, const shard&, rng&, communicator&,         \
                                     bucket_callback)
#define FASHION_MNIST_ADAM(B)                                                                                          \
  float trainer<B>::step<communicator>(parameters&, optimizer_state&, optim::adam&, float,                             \
                                       const Tensor<float, shape<B, 28, 28, 1>>&,                                      \
                                       const Tensor<std::int64_t, shape<B>>&, const shard&, rng&, communicator&)
#define FASHION_MNIST_ZERO1(B)                                                                                         \
  float trainer<B>::step<communicator>(parameters&, trainer<B>::sharded_optimizer<communicator>&, float,               \
                                       const Tensor<float, shape<B, 28, 28, 1>>&,                                      \
                                       const Tensor<std::int64_t, shape<B>>&, const shard&, rng&, communicator&)
extern template FASHION_MNIST_STEP(64);
extern template FASHION_MNIST_ADAM(64);
extern template FASHION_MNIST_ZERO1(64);
#ifdef FASHION_MNIST_MPI
extern template FASHION_MNIST_STEP(32);
extern template FASHION_MNIST_ADAM(32);
extern template FASHION_MNIST_ZERO1(32);
#endif
} // namespace fashion
