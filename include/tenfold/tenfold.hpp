#pragma once
// tenfold: everything that runs on the CPU. (tenfold/cuda.hpp adds the CUDA evaluator under nvcc.)
#include "tenfold/core/tensor.hpp"
#include "tenfold/core/views.hpp"
#include "tenfold/core/views_compose.hpp"
#include "tenfold/core/let.hpp"
#include "tenfold/ops/api.hpp"
#include "tenfold/ops/creation.hpp"
#include "tenfold/ops/composites.hpp"
#include "tenfold/ops/linear.hpp"
#include "tenfold/ops/pooling.hpp"
#include "tenfold/cpu/evaluator.hpp"
#include "tenfold/cpu/program.hpp"
