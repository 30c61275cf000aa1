// tenfold::io::save_npy and load_npy: files written by NumPy (tests/data/make_io_reference.py), save_npy's
// bytes against NumPy's, round trips, and every rule of the validation with a crafted file.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <tenfold/io/npy.hpp>
#include <tenfold/tenfold.hpp>
#include "temp_dir.hpp"
#include <vector>

using namespace tenfold;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {
const fs::path& temp_dir() {
  static const tenfold_test::temp_directory dir("tenfold_npy_test");
  return dir.path();
}

std::string reference(const std::string& name) {
  return (fs::path(__FILE__).parent_path() / "data/io" / name).string();
}

std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string path = (temp_dir() / name).string();
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A .npy file of format `major`.0 with this header text (unpadded) and data.
std::string npy_file(const std::string& header, const std::string& data = "", int major = 1) {
  std::string out = "\x93NUMPY";
  out += char(major);
  out += '\0';
  const std::size_t n = header.size();
  out += char(n & 0xff);
  out += char((n >> 8) & 0xff);
  if (major > 1) out += std::string(2, '\0');
  return out + header + data;
}

template <class T, class S>
bool same_bits(const Tensor<T, S>& a, const Tensor<T, S>& b) {
  return std::memcmp(a.data(), b.data(), sizeof(T) * std::size_t(S::size)) == 0;
}
} // namespace

TEST_CASE("npy: files written by NumPy", "[io][npy]") {
  const auto f32 = io::load_npy<float, shape<2, 3>>(reference("f32.npy"));
  CHECK(std::vector<float>(f32.begin(), f32.end()) == std::vector<float>{1.5f, -2.25f, 3.0f, 0.0f, 1e-3f, -7.0f});
  for (const char* v : {"f32_v2.npy", "f32_v3.npy"}) {
    INFO(v);
    CHECK(same_bits(io::load_npy<float, shape<2, 3>>(reference(v)), f32));
  }
  const auto f64 = io::load_npy<double, shape<3>>(reference("f64.npy"));
  CHECK(std::vector<double>(f64.begin(), f64.end()) == std::vector<double>{0.1, -1e300, 2.5});
  const auto i32 = io::load_npy<std::int32_t, shape<2, 2>>(reference("i32.npy"));
  CHECK(std::vector<std::int32_t>(i32.begin(), i32.end()) == std::vector<std::int32_t>{-2147483647 - 1, 7, 70000, -1});
  const auto i64 = io::load_npy<std::int64_t, shape<2>>(reference("i64.npy"));
  CHECK((i64(0) == INT64_MIN && i64(1) == 9007199254740993));
  const auto b = io::load_npy<bool, shape<3>>(reference("bool.npy"));
  CHECK((b(0) && !b(1) && b(2)));
  const auto h = io::load_npy<f16, shape<2>>(reference("f16.npy"));
  CHECK((float(h(0)) == 1.5f && float(h(1)) == -65504.0f));
  CHECK(io::load_npy<double, shape<>>(reference("scalar.npy"))() == 42.5);

  // Reads that widen exactly.
  CHECK(io::load_npy<double, shape<2, 3>>(reference("f32.npy"))(1, 1) == double(1e-3f));
  CHECK(io::load_npy<float, shape<2>>(reference("f16.npy"))(1) == -65504.0f);
  CHECK(io::load_npy<std::int64_t, shape<2, 2>>(reference("i32.npy"))(0, 0) == -2147483648LL);
  const auto u8 = io::load_npy<std::int32_t, shape<3>>(reference("u8.npy"));
  CHECK(std::vector<std::int32_t>(u8.begin(), u8.end()) == std::vector<std::int32_t>{0, 128, 255});
  CHECK(float(io::load_npy<bf16, shape<3>>(reference("u8.npy"))(2)) == 255.0f);

  // From memory.
  const std::string bytes = slurp(reference("f32.npy"));
  Tensor<float, shape<2, 3>> mem;
  io::load_npy_from_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "in memory", mem);
  CHECK(same_bits(mem, f32));
}

TEST_CASE("npy: save_npy writes NumPy's bytes, and round trips", "[io][npy]") {
  // The values of the reference files: save_npy must reproduce np.save's output byte for byte.
  auto same_as_numpy = [](const std::string& name, const auto& t) {
    const std::string path = (temp_dir() / name).string();
    io::save_npy(path, t);
    INFO(name);
    CHECK(slurp(path) == slurp(reference(name)));
    CHECK_FALSE(fs::exists(path + ".tmp"));
  };
  same_as_numpy("f32.npy", Tensor<float, shape<2, 3>>{1.5f, -2.25f, 3.0f, 0.0f, 1e-3f, -7.0f});
  same_as_numpy("f64.npy", Tensor<double, shape<3>>{0.1, -1e300, 2.5});
  same_as_numpy("i32.npy", Tensor<std::int32_t, shape<2, 2>>{-2147483647 - 1, 7, 70000, -1});
  same_as_numpy("i64.npy", Tensor<std::int64_t, shape<2>>{INT64_MIN, 9007199254740993});
  same_as_numpy("bool.npy", Tensor<bool, shape<3>>{true, false, true});
  same_as_numpy("f16.npy", Tensor<f16, shape<2>>{f16(1.5f), f16(-65504.0f)});
  same_as_numpy("scalar.npy", Tensor<double, shape<>>{42.5});

  auto round_trip = [](const std::string& name, const auto& t) {
    const std::string path = (temp_dir() / name).string();
    io::save_npy(path, t);
    std::remove_cvref_t<decltype(t)> back;
    io::load_npy(path, back);
    INFO(name);
    CHECK(same_bits(t, back));
    CHECK(slurp(path).size() % 64 == std::size_t(sizeof(t.data()[0]) * t.size()) % 64); // data 64-byte aligned
  };
  round_trip("a.npy",
             Tensor<float, shape<2, 1, 3>>{1e-40f, -0.0f, 3.25e10f, 7, -8, std::numeric_limits<float>::infinity()});
  round_trip("b.npy", Tensor<double, shape<1>>{5e-324});
  round_trip("c.npy", Tensor<std::int32_t, shape<3>>{INT32_MIN, 0, INT32_MAX});
  round_trip("d.npy", Tensor<std::int64_t, shape<1, 2>>{INT64_MIN, INT64_MAX});
  round_trip("e.npy", Tensor<bool, shape<2, 2>>{true, false, false, true});
  round_trip("f.npy", Tensor<f16, shape<2>>{std::numeric_limits<f16>::denorm_min(), f16(-2.0f)});
  Tensor<float, shape<12345678, 0>> wide_first_axis; // a 9-digit first extent: less of NumPy's growth room
  round_trip("g.npy", wide_first_axis);
  Tensor<float, shape<100, 100>> big;
  for (int k = 0; k < 100 * 100; ++k) big.data()[k] = float(k) / 3.0f;
  round_trip("big.npy", big);

  // Data whose shape is known at run time only: the same bytes as NumPy's.
  const std::vector<float> f32{1.5f, -2.25f, 3.0f, 0.0f, 1e-3f, -7.0f};
  const std::string runtime = (temp_dir() / "runtime.npy").string();
  io::save_npy(runtime, std::span<const float>(f32), {2, 3});
  CHECK(slurp(runtime) == slurp(reference("f32.npy")));
  CHECK_THROWS_WITH(io::save_npy(runtime, std::span<const float>(f32), {4, 2}),
                    Contains(runtime + ": the shape (4, 2) holds 8 elements, the data 6"));

  // And read back without knowing the shape.
  const auto back = io::load_npy_array<float>(runtime);
  CHECK(back.shape == std::vector<index_t>{2, 3});
  CHECK(back.data == f32);
  const auto widened = io::load_npy_array<std::int64_t>(reference("i32.npy"));
  CHECK(widened.shape == std::vector<index_t>{2, 2});
  CHECK(widened.data == std::vector<std::int64_t>{-2147483648LL, 7, 70000, -1});
  CHECK(io::load_npy_array<double>(reference("scalar.npy")).data == std::vector<double>{42.5});
  CHECK_THROWS_WITH(io::load_npy_array<std::int32_t>(reference("f32.npy")), Contains("dtype '<f4' in the file"));
  const std::string cut = slurp(runtime);
  const std::string truncated = (temp_dir() / "truncated.npy").string();
  std::ofstream(truncated, std::ios::binary).write(cut.data(), std::streamsize(cut.size() - 4));
  CHECK_THROWS_WITH(io::load_npy_array<float>(truncated), Contains("file too short: 20 data bytes, the shape (2, 3) of '<f4' needs 24"));

  const std::string nowhere = (temp_dir() / "no_such_dir" / "x.npy").string();
  CHECK_THROWS_WITH(io::save_npy(nowhere, big), Contains("tenfold::io::npy: " + nowhere + ": cannot create"));
}

TEST_CASE("npy: every validation error names the file and the problem", "[io][npy]") {
  using S = shape<2, 3>;
  auto check_path = [](const std::string& path, const std::string& what) {
    Tensor<float, S> t;
    CHECK_THROWS_WITH(io::load_npy(path, t), Contains("tenfold::io::npy: " + path + ": ") && Contains(what));
  };
  auto check = [&](const std::string& name, const std::string& bytes, const std::string& what) {
    INFO(name);
    check_path(write_file(name, bytes), what);
    Tensor<float, S> t;
    CHECK_THROWS_WITH(io::load_npy_from_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), name, t),
                      Contains("tenfold::io::npy: " + name + ": ") && Contains(what));
  };
  const std::string data(24, '\0'); // 2 x 3 float32
  auto header = [](const std::string& descr, const std::string& shape, const char* fortran = "False") {
    return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
  };
  const std::string good = header("<f4", "(2, 3)");
  Tensor<float, S> t;
  CHECK_NOTHROW(io::load_npy(write_file("good", npy_file(good, data)), t));
  CHECK_NOTHROW(io::load_npy(write_file("good_v2", npy_file(good, data, 2)), t));
  CHECK_NOTHROW(io::load_npy(
      write_file("spacing", npy_file("  {\"shape\":(2,3),'descr':'<f4' , 'fortran_order':False}", data)), t));
  CHECK_NOTHROW(io::load_npy(write_file("python2", npy_file(header("<f4", "(2L, 3L)"), data)), t));

  check("empty", "", "file too short: 0 bytes");
  check("short", "\x93NUMPY\x01", "file too short: 7 bytes, a .npy file starts with at least 10");
  check("magic", "PK\x03\x04 not numpy", "bad magic: not a .npy file");
  check("version", npy_file(good, data, 4), "format version 4.0 (tenfold reads 1.0, 2.0 and 3.0)");
  check("short_v2", npy_file(good, data, 2).substr(0, 11), "a version 2 .npy file starts with 12");
  check("header_past_end", npy_file(good, data).substr(0, 40),
        "header length 60 runs past the end of the file (30 bytes");
  check("not_dict", npy_file("('descr', '<f4')", data), "the header is not a dict");
  check("unknown_key", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", data),
        "unknown key 'x' in the header");
  check("twice", npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", data),
        "key 'descr' twice in the header");
  check("no_shape", npy_file("{'descr': '<f4', 'fortran_order': False}", data), "the header has no 'shape'");
  check("no_descr", npy_file("{'fortran_order': False, 'shape': (2, 3)}", data), "the header has no 'descr'");
  check("unclosed", npy_file("{'descr': '<f4", data), "descr: the string is not closed");
  check("no_close", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", data),
        "expected ',' or '}' in the header's dict");
  check("after_dict", npy_file(good + "x", data), "characters after the header's dict");
  check("fortran_word", npy_file(header("<f4", "(2, 3)", "0"), data), "fortran_order is neither True nor False");
  check_path(reference("fortran.npy"), "fortran_order is True: column-major data is not supported");
  check_path(reference("big_endian.npy"), "descr '>f4' is big-endian: convert it with a.astype('<f4') first");
  check("complex", npy_file(header("<c8", "(2, 3)"), data), "unsupported descr '<c8'");
  check("no_order", npy_file(header("f4", "(2, 3)"), data), "unsupported descr 'f4'");
  check("pipe_f4", npy_file(header("|f4", "(2, 3)"), data), "descr '|f4': '|' (no byte order) is for 1-byte types");
  check("structured", npy_file("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3)}", data),
        "descr is a list: structured dtypes are not supported");
  check("int_shape", npy_file(header("<f4", "(6)"), data), "shape (6) is not a tuple: write (n,)");
  check("negative_shape", npy_file(header("<f4", "(-2, 3)"), data), "shape holds something other than a non-negative");
  check("shape_digits", npy_file(header("<f4", "(99999999999999999999, 3)"), data), "does not fit in 64 bits");
  check("shape_overflow", npy_file(header("<f8", "(4294967296, 4294967296)"), data),
        "shape (4294967296, 4294967296) of '<f8' overflows");
  check("shape_mismatch", npy_file(header("<f4", "(3, 2)"), data), "shape (3, 2) in the file, expected (2, 3)");
  check("rank_mismatch", npy_file(header("<f4", "(6,)"), data), "shape (6,) in the file, expected (2, 3)");
  check("dtype_mismatch", npy_file(header("<f8", "(2, 3)"), data + data),
        "dtype '<f8' in the file, expected '<f4' or one that float32 holds exactly: '|u1', '|i1', '<i2', '<u2', "
        "'<f2'; a lossy read is an explicit cast");
  check("truncated", npy_file(good, data.substr(1)),
        "file too short: 23 data bytes, the shape (2, 3) of '<f4' needs 24");
  check("trailing", npy_file(good, data + "!"), "trailing bytes: 25 data bytes, the shape (2, 3) of '<f4' needs 24");
  check_path(temp_dir().string(), "is a directory");
  check_path("/dev/null", "not a regular file");
  check_path((temp_dir() / "does_not_exist.npy").string(), "cannot open: No such file or directory");

  // A bool byte other than 0 or 1 would be undefined behaviour as a C++ bool: an error instead.
  const std::string bools = write_file("bool_byte", npy_file(header("|b1", "(3,)"), std::string("\1\2\0", 3)));
  Tensor<bool, shape<3>> b;
  CHECK_THROWS_WITH(io::load_npy(bools, b), Contains(bools + ": bool element 1 is the byte 2, not 0 or 1"));
  // '<' and '=' are accepted for a one-byte type, as '|'.
  CHECK_NOTHROW(io::load_npy(write_file("bool_lt", npy_file(header("<b1", "(3,)"), std::string("\1\0\0", 3))), b));
}
