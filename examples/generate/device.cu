// generate's decode steps on a CUDA device (device.hpp): gpt::device_decoder behind a C++ interface.
#include "../decoder/device_decoder.hpp"
#include "device.hpp"

namespace gpt {
struct device_stepper {
  device_decoder<generate_vocab> d;
  explicit device_stepper(const parameters<generate_vocab>& p) : d(p) {}
};
void device_stepper_deleter::operator()(device_stepper* s) const { delete s; }

device_stepper_ptr make_device_stepper(const parameters<generate_vocab>& p) {
  if (!cuda::device_available()) throw error("generate --device cuda: no CUDA device");
  return device_stepper_ptr(new device_stepper(p));
}
void load_cache(device_stepper& s, const generator<generate_vocab>& g) { s.d.load(g); }
index_t cached_length(const device_stepper& s) { return s.d.length; }
std::span<const float> device_step(device_stepper& s, std::int32_t token) { return s.d.step(token); }
} // namespace gpt
