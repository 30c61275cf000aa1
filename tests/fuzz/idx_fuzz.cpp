// libFuzzer target for tenfold::io::read_idx_from_bytes (scripts/fuzz_idx.sh builds and runs it). Any input
// must give a tensor or a tenfold::error: a crash, a sanitizer report or another exception is a bug.
#include <cstddef>
#include <cstdint>
#include <span>
#include <tenfold/io/idx.hpp>

namespace {
template <class T, class S>
void read_as(std::span<const std::byte> bytes, tenfold::io::idx_first_axis first) {
  tenfold::Tensor<T, S> out;
  try {
    tenfold::io::read_idx_from_bytes(bytes, "fuzz input", out, first);
  } catch (const tenfold::error&) {
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using tenfold::shape, tenfold::io::idx_first_axis;
  const auto bytes = std::as_bytes(std::span(data, size));
  // The shapes of the seed corpus (so that valid files get through to the data), and a few others.
  read_as<float, shape<2, 3>>(bytes, idx_first_axis::exact);
  read_as<std::int32_t, shape<2, 3>>(bytes, idx_first_axis::prefix);
  read_as<double, shape<4>>(bytes, idx_first_axis::exact);
  read_as<std::int64_t, shape<1, 2, 2>>(bytes, idx_first_axis::prefix);
  read_as<float, shape<>>(bytes, idx_first_axis::exact);
  return 0;
}
