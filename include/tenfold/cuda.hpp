#pragma once
// tenfold/cuda.hpp: the CUDA evaluator, for the very same expression types as the CPU one. Including it
// adds tenfold::cuda (device tensors, streams, pinned buffers, the arena, cuda::eval, graphs); it changes the
// meaning of nothing else. Compile with nvcc, -std=c++20 and --expt-relaxed-constexpr (the expression
// nodes call constexpr standard-library functions, std::get and std::array, from device code).
//
//   cuda::Tensor<float, shape<64, 1024>> x = cuda::to_device(host_x);
//   cuda::Tensor<float, shape<64, 1024>> y;
//   y = softmax(x.expr());                  // one kernel: a warp per row, its reductions in registers
//   Tensor<float, shape<64, 1024>> back = cuda::to_host(y);
#if !defined(__CUDACC__)
#error "tenfold/cuda.hpp must be compiled by nvcc (a .cu file, or -x cu); tenfold/tenfold.hpp is the CPU library"
#endif
#if !defined(__CUDACC_RELAXED_CONSTEXPR__)
#error "tenfold/cuda.hpp needs nvcc's --expt-relaxed-constexpr (device code calls constexpr std::get, std::forward, std::array)"
#endif

#include "tenfold/core/tensor.hpp"
#include "tenfold/core/views.hpp"
#include "tenfold/core/views_compose.hpp"
#include "tenfold/ops/api.hpp"
#include "tenfold/ops/cast.hpp"
#include "tenfold/ops/composites.hpp"
#include "tenfold/ops/creation.hpp"
#include "tenfold/ops/linear.hpp"
#include "tenfold/ops/pooling.hpp"

#include "tenfold/cuda/error.hpp"
#include "tenfold/cuda/evaluator.hpp"
#include "tenfold/cuda/graph.hpp"
#include "tenfold/cuda/memory.hpp"
#include "tenfold/cuda/tensor.hpp"
