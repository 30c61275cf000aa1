#pragma once
// Training the CNN on a CUDA device (`fashion_mnist --device cuda`): the same stages (cnn.hpp), their
// gradients by vjp / value_and_grad over cuda::Tensor parameters, and Adam's updates as device kernels.
// The parameters, moments, saved activations and gradients live on the device for the whole run; each
// step uploads its batch and reads back its loss. download() copies the parameters (and batch norm's
// running statistics) into a host `parameters`, for the test accuracy and the weights file.
// Defined in device_step.cu, compiled by nvcc where the build has CUDA (FASHION_MNIST_CUDA); this header
// needs no CUDA headers, so main.cpp stays a C++ file.
#include <memory>

#include "cnn.hpp"

namespace fashion {
struct device_trainer;
struct device_trainer_deleter {
  void operator()(device_trainer* t) const;
};
using device_trainer_ptr = std::unique_ptr<device_trainer, device_trainer_deleter>;

inline constexpr index_t device_batch = 64;
// A trainer holding a copy of p (and zero moments) on the current device; throws tenfold::error where
// there is no device.
device_trainer_ptr make_device_trainer(const parameters& p);
// One Adam step on the batch (x, labels) with the dropout mask of dropout_rng's next draw (the same
// draw as the CPU trainer's); returns the batch's mean loss.
float device_step(device_trainer& t, optim::adam& opt, float lr, const Tensor<float, shape<device_batch, 28, 28, 1>>& x,
                  const Tensor<std::int64_t, shape<device_batch>>& labels, rng& dropout_rng);
void download(const device_trainer& t, parameters& p);
} // namespace fashion
