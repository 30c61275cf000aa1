#pragma once
// `generate --device cuda`: decode steps on a CUDA device, each a replay of one CUDA graph
// (examples/decoder/device_decoder.hpp); the window's prefills stay on the CPU (generator::prefill), their
// cache copied to the device. Defined in device.cu, compiled by nvcc where the build has CUDA
// (GENERATE_CUDA); this header needs no CUDA headers, so main.cpp stays a C++ file.
#include <memory>
#include <span>

#include "../decoder/generator.hpp"

namespace gpt {
inline constexpr index_t generate_vocab = 114; // the fortunes' distinct bytes (examples/decoder)

struct device_stepper;
struct device_stepper_deleter {
  void operator()(device_stepper* s) const;
};
using device_stepper_ptr = std::unique_ptr<device_stepper, device_stepper_deleter>;

// A copy of p's weights on the current device; throws tenfold::error where there is none.
device_stepper_ptr make_device_stepper(const parameters<generate_vocab>& p);
// The cache of g (after its prefill) copied to the device.
void load_cache(device_stepper& s, const generator<generate_vocab>& g);
// The positions the device's cache holds.
index_t cached_length(const device_stepper& s);
// The logits after `token` at the next position (valid until the next step).
std::span<const float> device_step(device_stepper& s, std::int32_t token);
} // namespace gpt
