// tenfold::io::safetensors_file and safetensors_writer: the reference file written by Python
// (tests/data/make_io_reference.py), round trips, and every rule of the validation with a crafted file.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <tenfold/io/safetensors.hpp>
#include <tenfold/tenfold.hpp>
#include "temp_dir.hpp"
#include <vector>

using namespace tenfold;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {
const fs::path& temp_dir() {
  static const tenfold_test::temp_directory dir("tenfold_safetensors_test");
  return dir.path();
}

std::string reference_file() { return (fs::path(__FILE__).parent_path() / "data/io/reference.safetensors").string(); }

std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string path = (temp_dir() / name).string();
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A safetensors file: the 8-byte length of `header`, `header`, then `data`.
std::string st_file(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

template <class T, class S>
bool same_bits(const Tensor<T, S>& a, const Tensor<T, S>& b) {
  return std::memcmp(a.data(), b.data(), sizeof(T) * std::size_t(S::size)) == 0;
}
} // namespace

TEST_CASE("safetensors: the reference file written by Python", "[io][safetensors]") {
  const io::safetensors_file f(reference_file());
  CHECK(f.names() == std::vector<std::string>{"bf16", "bool", "f16", "f32", "f64", "i32", "i64", "u8"});
  CHECK(f.metadata() ==
        std::map<std::string, std::string>{{"format", "pt"}, {"source", "tests/data/make_io_reference.py"}});
  CHECK(f.contains("f32"));
  CHECK_FALSE(f.contains("F32"));
  CHECK_FALSE(f.contains("__metadata__"));

  Tensor<float, shape<2, 3>> f32;
  f.read("f32", f32);
  CHECK(std::vector<float>(f32.begin(), f32.end()) == std::vector<float>{1.5f, -2.25f, 3.0f, 0.0f, 1e-3f, -7.0f});
  Tensor<double, shape<3>> f64;
  f.read("f64", f64);
  CHECK(std::vector<double>(f64.begin(), f64.end()) == std::vector<double>{0.1, -1e300, 2.5});
  Tensor<std::int32_t, shape<2, 2>> i32;
  f.read("i32", i32);
  CHECK(std::vector<std::int32_t>(i32.begin(), i32.end()) == std::vector<std::int32_t>{-2147483647 - 1, 7, 70000, -1});
  Tensor<std::int64_t, shape<2>> i64;
  f.read("i64", i64);
  CHECK((i64(0) == INT64_MIN && i64(1) == 9007199254740993));
  Tensor<bool, shape<3>> b;
  f.read("bool", b);
  CHECK((b(0) && !b(1) && b(2)));
  Tensor<f16, shape<2>> h;
  f.read("f16", h);
  CHECK((float(h(0)) == 1.5f && float(h(1)) == -65504.0f));
  Tensor<bf16, shape<4>> bf;
  f.read("bf16", bf);
  CHECK((float(bf(0)) == 1.0f && float(bf(1)) == -2.5f && float(bf(2)) == 0.15625f));
  CHECK(bf(3).bits == bf16(3.0e38f).bits); // Python rounded it to nearest even, as bf16(float) does

  // Reads that widen exactly.
  Tensor<double, shape<2, 3>> f32_as_f64;
  f.read("f32", f32_as_f64);
  CHECK(f32_as_f64(1, 1) == double(1e-3f));
  Tensor<float, shape<4>> bf_as_float;
  f.read("bf16", bf_as_float);
  CHECK(bf_as_float(1) == -2.5f);
  Tensor<double, shape<2>> h_as_double;
  f.read("f16", h_as_double);
  CHECK(h_as_double(1) == -65504.0);
  Tensor<std::int64_t, shape<2, 2>> i32_as_i64;
  f.read("i32", i32_as_i64);
  CHECK(i32_as_i64(0, 0) == -2147483648LL);
  Tensor<std::int32_t, shape<3>> u8_as_i32;
  f.read("u8", u8_as_i32);
  CHECK(std::vector<std::int32_t>(u8_as_i32.begin(), u8_as_i32.end()) == std::vector<std::int32_t>{0, 128, 255});
  Tensor<bf16, shape<3>> u8_as_bf16;
  f.read("u8", u8_as_bf16);
  CHECK(float(u8_as_bf16(2)) == 255.0f);

  // The same bytes from memory; a copy of the file object keeps the mapping.
  const std::string bytes = slurp(reference_file());
  const auto mem = io::safetensors_file::from_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())));
  Tensor<float, shape<2, 3>> f32_mem;
  mem.read("f32", f32_mem);
  CHECK(same_bits(f32, f32_mem));
  auto copy = std::make_unique<io::safetensors_file>(f);
  const io::safetensors_file second = *copy;
  copy.reset();
  Tensor<double, shape<3>> f64_again;
  second.read("f64", f64_again);
  CHECK(same_bits(f64, f64_again));
}

TEST_CASE("safetensors: writer and reader round trip every element type", "[io][safetensors]") {
  Tensor<float, shape<2, 3>> a{1.5f, -0.0f, 3.25e10f, -7.0f, 1e-40f, std::numeric_limits<float>::infinity()};
  Tensor<double, shape<4>> d{0.1, -1e300, 5e-324, -0.0};
  Tensor<std::int32_t, shape<3, 1>> i{INT32_MIN, 0, INT32_MAX};
  Tensor<std::int64_t, shape<2>> l{INT64_MIN, INT64_MAX};
  Tensor<bf16, shape<2, 2>> bf{bf16(1.0f), bf16(-3.5f), bf16(1e-30f), std::numeric_limits<bf16>::max()};
  Tensor<f16, shape<2>> h{f16(0.5f), std::numeric_limits<f16>::denorm_min()};
  Tensor<bool, shape<5>> b{true, false, false, true, true};
  Tensor<float, shape<>> s{42.0f};
  Tensor<float, shape<64, 64>> big; // past the inline storage: a heap block
  for (int k = 0; k < 64 * 64; ++k) big.data()[k] = float(k) * 0.25f;

  io::safetensors_writer w;
  w.add("layer.0.weight", a);
  w.add("d", d);
  w.add("i", i);
  w.add("l", l);
  w.add("bf", bf);
  w.add("h", h);
  w.add("b", b);
  w.add("scalar", s);
  w.add("big", big);
  w.metadata("format", "pt");
  w.metadata("note", "replaced below");
  w.metadata("note", "héllo wörld");
  const std::string path = (temp_dir() / "round_trip.safetensors").string();
  write_file("round_trip.safetensors", "an older file, replaced whole");
  w.write(path);
  CHECK_FALSE(fs::exists(path + ".tmp"));
  std::uint64_t header_length;
  std::memcpy(&header_length, slurp(path).data(), 8);
  CHECK(header_length % 8 == 0); // padded with spaces: the data buffer starts 8-byte aligned

  const io::safetensors_file f(path);
  CHECK(f.names() == std::vector<std::string>{"layer.0.weight", "d", "i", "l", "bf", "h", "b", "scalar", "big"});
  CHECK(f.metadata() == std::map<std::string, std::string>{{"format", "pt"}, {"note", "héllo wörld"}});
  auto back = [&](const char* name, const auto& t) {
    std::remove_cvref_t<decltype(t)> r;
    f.read(name, r);
    INFO(name);
    CHECK(same_bits(t, r));
  };
  back("layer.0.weight", a);
  back("d", d);
  back("i", i);
  back("l", l);
  back("bf", bf);
  back("h", h);
  back("b", b);
  back("scalar", s);
  back("big", big);

  // An empty writer writes a valid empty file.
  io::safetensors_writer().write((temp_dir() / "empty.safetensors").string());
  const io::safetensors_file empty((temp_dir() / "empty.safetensors").string());
  CHECK((empty.names().empty() && empty.metadata().empty()));
}

TEST_CASE("safetensors: writer errors", "[io][safetensors]") {
  Tensor<float, shape<2>> t{1, 2};
  io::safetensors_writer w;
  w.add("x", t);
  CHECK_THROWS_WITH(w.add("x", t), Contains("tenfold::io::safetensors_writer: tensor 'x' added twice"));
  CHECK_THROWS_WITH(w.add("__metadata__", t), Contains("'__metadata__' is reserved"));
  CHECK_THROWS_WITH(w.add("bad\xff", t), Contains("tensor name 'bad\xff' is not UTF-8"));
  CHECK_THROWS_WITH(w.metadata("k", "\xc0\x80"), Contains("metadata value"));
  const std::string nowhere = (temp_dir() / "no_such_dir" / "out.safetensors").string();
  CHECK_THROWS_WITH(w.write(nowhere), Contains("tenfold::io::safetensors: " + nowhere + ": cannot create") &&
                                          Contains("No such file or directory"));
}

TEST_CASE("safetensors: every validation error names the file and the problem", "[io][safetensors]") {
  auto check = [](const std::string& name, const std::string& bytes, const std::string& what) {
    const std::string path = write_file(name, bytes);
    INFO(name);
    CHECK_THROWS_WITH(io::safetensors_file(path),
                      Contains("tenfold::io::safetensors: " + path + ": ") && Contains(what));
    // The same from memory, under the name given.
    CHECK_THROWS_WITH(io::safetensors_file::from_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), name),
                      Contains("tenfold::io::safetensors: " + name + ": ") && Contains(what));
  };
  const std::string f32_2 = R"("dtype":"F32","shape":[2])";
  const std::string eight(8, '\x01');

  check("empty", "", "file too short: 0 bytes");
  check("short_length", std::string(5, '\0'), "file too short: 5 bytes");
  check("past_end", st_file("{}").substr(0, 9), "header length 2 runs past the end of the file (1 bytes follow");
  std::string huge(8, '\0');
  huge[4] = 1; // 2^32
  check("over_limit", huge + "{}", "header length 4294967296 exceeds the limit of 100000000 bytes");
  check("utf8", st_file("{\"a\xff\":1}"), "the header is not UTF-8 (byte 3 of the header)");
  check("overlong_utf8", st_file("{\"\xc0\xaf\":1}"), "not UTF-8 (byte 2");
  check("surrogate_utf8", st_file("{\"\xed\xa0\x80\":1}"), "not UTF-8 (byte 2");
  check("bad_json", st_file("{\"a\": }"), "the header is not valid JSON: parse error");
  check("no_header", st_file(""), "the header is not valid JSON");
  check("array", st_file("[1, 2]"), "the header is a JSON array, not an object");
  check("entry_kind", st_file(R"({"a": 3})"), "tensor 'a': its entry is an integer, not an object");
  check("unknown_dtype", st_file(R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})", "xx"),
        "tensor 'a': unknown dtype 'F8' (known: BOOL, U8");
  check("dtype_kind", st_file(R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,2]}})", "xx"),
        "tensor 'a': dtype is an integer, not a string");
  check("negative_shape", st_file(R"({"a":{"dtype":"U8","shape":[-2],"data_offsets":[0,2]}})", "xx"),
        "tensor 'a': shape holds a negative integer, not a non-negative integer");
  check("float_shape", st_file(R"({"a":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}})", "xx"),
        "shape holds a non-integer number");
  check("shape_kind", st_file(R"({"a":{"dtype":"U8","shape":"2","data_offsets":[0,2]}})", "xx"),
        "shape is string, not an array");
  check("shape_overflow",
        st_file(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight),
        "tensor 'a': shape [4294967296,4294967296] overflows");
  check("offsets_form", st_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2,4]}})", "xx"),
        "tensor 'a': data_offsets is not [begin, end]");
  check("offsets_negative", st_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[-1,1]}})", "xx"),
        "data_offsets is not [begin, end]");
  check("offsets_reversed", st_file(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[2,0]}})", "xx"),
        "tensor 'a': data_offsets [2, 0] end before they begin");
  check("byte_count", st_file("{\"a\":{" + f32_2 + ",\"data_offsets\":[0,4]}}", eight),
        "tensor 'a': data_offsets [0, 4] hold 4 bytes, its shape [2] of F32 needs 8");
  check("missing_key", st_file(R"({"a":{"dtype":"F32","shape":[2]}})", eight), "tensor 'a': no data_offsets");
  check("unknown_key", st_file("{\"a\":{" + f32_2 + ",\"data_offsets\":[0,8],\"x\":1}}", eight),
        "tensor 'a': unknown key 'x'");
  check("gap_at_start", st_file("{\"a\":{" + f32_2 + ",\"data_offsets\":[4,12]}}", "...." + eight),
        "gap in the data buffer: bytes [0, 4) belong to no tensor (before tensor 'a')");
  check("gap_between",
        st_file("{\"a\":{" + f32_2 + ",\"data_offsets\":[0,8]},\"b\":{" + f32_2 + ",\"data_offsets\":[9,17]}}",
                eight + "." + eight),
        "gap in the data buffer: bytes [8, 9) belong to no tensor (before tensor 'b')");
  check("overlap",
        st_file("{\"a\":{" + f32_2 + ",\"data_offsets\":[0,8]},\"b\":{" + f32_2 + ",\"data_offsets\":[4,12]}}",
                eight + "...."),
        "tensor 'b' overlaps tensor 'a': its data_offsets begin at 4, before 8");
  check("past_buffer", st_file("{\"a\":{" + f32_2 + ",\"data_offsets\":[0,8]}}", "...."),
        "tensor 'a' runs past the end of the file: its data ends at 8, the data buffer has 4 bytes");
  check("trailing", st_file("{\"a\":{" + f32_2 + ",\"data_offsets\":[0,8]}}", eight + "!"),
        "trailing bytes: the data buffer has 9 bytes, the tensors cover 8");
  check("trailing_no_tensor", st_file("{}", "!"), "trailing bytes: the data buffer has 1 bytes, the tensors cover 0");
  check("duplicate_name",
        st_file("{\"a\":{" + f32_2 + ",\"data_offsets\":[0,8]},\"a\":{" + f32_2 + ",\"data_offsets\":[8,16]}}",
                eight + eight),
        "duplicate tensor name 'a' in the header");
  check("duplicate_key", st_file("{\"a\":{" + f32_2 + ",\"data_offsets\":[0,8],\"dtype\":\"I32\"}}", eight),
        "duplicate key 'dtype' in the header");
  check("metadata_kind", st_file(R"({"__metadata__":["x"]})"), "__metadata__ is array, not an object of strings");
  check("metadata_value", st_file(R"({"__metadata__":{"k":1.5}})"), "__metadata__['k'] is a non-integer number");

  // Deep nesting must not exhaust the stack (nlohmann's parser and destructor are iterative).
  check("deep", st_file("{\"a\":" + std::string(200000, '[') + std::string(200000, ']') + "}"),
        "tensor 'a': its entry is array, not an object");

  const std::string dir = temp_dir().string();
  CHECK_THROWS_WITH(io::safetensors_file(dir), Contains(dir + ": is a directory"));
  CHECK_THROWS_WITH(io::safetensors_file("/dev/null"), Contains("/dev/null: not a regular file"));
  const std::string missing = (temp_dir() / "does_not_exist").string();
  CHECK_THROWS_WITH(io::safetensors_file(missing), Contains(missing + ": cannot open: No such file or directory"));

  CHECK(io::safetensors_file(write_file("null_metadata", st_file(R"({"__metadata__":null})"))).metadata().empty());

  // Zero-sized tensors take no bytes, anywhere in the buffer; the reference reader allows them too.
  const std::string zero =
      st_file("{\"z\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[8,8]},\"a\":{" + f32_2 +
                  ",\"data_offsets\":[0,8]},\"y\":{\"dtype\":\"I8\",\"shape\":[0],\"data_offsets\":[8,8]}}",
              eight);
  const io::safetensors_file zf(write_file("zero_sized", zero));
  CHECK(zf.names() == std::vector<std::string>{"a", "y", "z"});
}

TEST_CASE("safetensors: read errors name the file, the tensor, and expected vs found", "[io][safetensors]") {
  const std::string path = reference_file();
  const io::safetensors_file f(path);
  const std::string prefix = "tenfold::io::safetensors: " + path + ": ";
  Tensor<float, shape<3, 2>> wrong_shape;
  CHECK_THROWS_WITH(f.read("f32", wrong_shape),
                    Contains(prefix + "tensor 'f32': shape [2,3] in the file, expected [3,2]"));
  Tensor<float, shape<2, 3, 1>> wrong_rank;
  CHECK_THROWS_WITH(f.read("f32", wrong_rank), Contains("shape [2,3] in the file, expected [2,3,1]"));
  Tensor<float, shape<3>> f64_as_float;
  CHECK_THROWS_WITH(f.read("f64", f64_as_float),
                    Contains(prefix + "tensor 'f64': dtype F64 in the file, expected F32 (or one that float32 holds "
                                      "exactly: U8, I8, I16, U16, F16, BF16)"));
  Tensor<std::int32_t, shape<2>> i64_as_i32;
  CHECK_THROWS_WITH(f.read("i64", i64_as_i32), Contains("tensor 'i64': dtype I64 in the file, expected I32"));
  Tensor<bf16, shape<2>> f16_as_bf16;
  CHECK_THROWS_WITH(f.read("f16", f16_as_bf16), Contains("dtype F16 in the file, expected BF16"));
  Tensor<float, shape<3>> bool_as_float;
  CHECK_THROWS_WITH(f.read("bool", bool_as_float), Contains("dtype BOOL in the file, expected F32"));
  Tensor<bool, shape<3>> u8_as_bool;
  CHECK_THROWS_WITH(f.read("u8", u8_as_bool), Contains("dtype U8 in the file, expected BOOL;"));
  Tensor<float, shape<2>> any;
  CHECK_THROWS_WITH(f.read("weight", any),
                    Contains(prefix + "no tensor named 'weight' (the file has 8 tensors: bf16, bool, f16, f32"));

  // A BOOL byte other than 0 or 1 would be undefined behaviour as a C++ bool: an error instead.
  const std::string bools =
      st_file(R"({"b":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", std::string("\1\0\2", 3));
  const std::string bpath = write_file("bool_byte", bools);
  Tensor<bool, shape<3>> b;
  CHECK_THROWS_WITH(io::safetensors_file(bpath).read("b", b),
                    Contains(bpath + ": tensor 'b': BOOL element 2 is the byte 2, not 0 or 1"));
}
