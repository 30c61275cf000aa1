// libFuzzer target for tenfold::io::load_npy_from_bytes (scripts/fuzz_io.sh npy builds and runs it, seeded with
// tests/data/io). Any input must give a tensor or a tenfold::error: a crash, a sanitizer report or another
// exception is a bug.
// Runs so far (clang 14, -fsanitize=fuzzer,address,undefined, seeds tests/data/io + npy.dict): 1,931,230 inputs
// (an earlier revision of io/, the same checks) then 3,000,000 on this one from the grown corpus, 368 s at
// 8,150/s (every load of a bad input throws: 12 per input); no crash, leak or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <span>
#include <tenfold/io/npy.hpp>

namespace {
template <class T, class S>
void load_as(std::span<const std::byte> bytes) {
  tenfold::Tensor<T, S> out;
  try {
    tenfold::io::load_npy_from_bytes(bytes, "fuzz input", out);
  } catch (const tenfold::error&) {
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using tenfold::shape, tenfold::bf16, tenfold::f16;
  const auto bytes = std::as_bytes(std::span(data, size));
  // The shapes of the seed files (so that valid files get through to the data), in several types.
  load_as<float, shape<2, 3>>(bytes);
  load_as<double, shape<2, 3>>(bytes);
  load_as<double, shape<3>>(bytes);
  load_as<std::int32_t, shape<2, 2>>(bytes);
  load_as<std::int64_t, shape<2, 2>>(bytes);
  load_as<std::int64_t, shape<2>>(bytes);
  load_as<bool, shape<3>>(bytes);
  load_as<f16, shape<2>>(bytes);
  load_as<float, shape<2>>(bytes);
  load_as<std::int32_t, shape<3>>(bytes);
  load_as<bf16, shape<3>>(bytes);
  load_as<double, shape<>>(bytes);
  return 0;
}
