#pragma once
// The training steps the example runs: trainer<B>::run for its communicator, compiled in step_64.cpp
// (one process) and step_32.cpp (a rank's shard), not in main.cpp. They are most of the example's
// compile time, and as two files they build in parallel.
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
extern template FASHION_MNIST_STEP(64);
#ifdef FASHION_MNIST_MPI
extern template FASHION_MNIST_STEP(32);
#endif
} // namespace fashion
