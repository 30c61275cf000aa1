// tenfold::io::read_idx: small IDX files written here (plain and gzipped), every error it reports, and
// Fashion-MNIST when the Debian package dataset-fashion-mnist is installed.
#include <zlib.h>

#include <array>
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <tenfold/io/idx.hpp>
#include <tenfold/tenfold.hpp>
#include "temp_dir.hpp"
#include <vector>

using namespace tenfold;
using Catch::Contains;
using bytes = std::vector<unsigned char>;
namespace fs = std::filesystem;

namespace {
const fs::path& temp_dir() {
  static const tenfold_test::temp_directory dir("tenfold_idx_test");
  return dir.path();
}

template <class T>
void put_be(bytes& out, T v) { // one element, big-endian
  using U = std::conditional_t<sizeof(T) == 1, std::uint8_t,
                               std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                                  std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
  const auto u = std::bit_cast<U>(v);
  for (int i = int(sizeof(T)) - 1; i >= 0; --i) out.push_back(static_cast<unsigned char>(u >> (8 * i)));
}

bytes header(unsigned code, std::vector<std::uint32_t> dims) {
  bytes h{0, 0, static_cast<unsigned char>(code), static_cast<unsigned char>(dims.size())};
  for (auto d : dims) put_be(h, d);
  return h;
}

template <class T>
bytes idx_file(unsigned code, std::vector<std::uint32_t> dims, const std::vector<T>& values) {
  bytes b = header(code, std::move(dims));
  for (T v : values) put_be(b, v);
  return b;
}

std::string write_plain(const std::string& name, const bytes& b) {
  const std::string path = (temp_dir() / name).string();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  return path;
}

std::string write_gz(const std::string& name, const bytes& b) {
  const std::string path = (temp_dir() / name).string();
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f);
  if (!b.empty()) REQUIRE(gzwrite(f, b.data(), unsigned(b.size())) == int(b.size()));
  REQUIRE(gzclose(f) == Z_OK);
  return path;
}

bytes slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return bytes(std::istreambuf_iterator<char>(in), {});
}
} // namespace

TEST_CASE("read_idx: every IDX type, plain and gzipped", "[idx]") {
  for (bool gz : {false, true}) {
    auto write = [&](const std::string& name, const bytes& b) {
      return gz ? write_gz(name + ".gz", b) : write_plain(name, b);
    };
    INFO((gz ? "gzip" : "plain"));
    const auto u8 = write("u8", idx_file<std::uint8_t>(0x08, {2, 3}, {0, 1, 2, 127, 128, 255}));
    CHECK(io::read_idx<float, shape<2, 3>>(u8)(1, 2) == 255.0f);
    const auto as_int = io::read_idx<std::int32_t, shape<2, 3>>(u8);
    CHECK(std::vector<std::int32_t>(as_int.begin(), as_int.end()) == std::vector<std::int32_t>{0, 1, 2, 127, 128, 255});
    CHECK(io::read_idx<double, shape<2, 3>>(u8)(1, 1) == 128.0);

    const auto i8 = write("i8", idx_file<std::int8_t>(0x09, {3}, {-128, -1, 127}));
    CHECK(io::read_idx<float, shape<3>>(i8)(0) == -128.0f);
    CHECK(io::read_idx<std::int32_t, shape<3>>(i8)(1) == -1);

    const auto i16 = write("i16", idx_file<std::int16_t>(0x0b, {2}, {-32768, 1234}));
    const auto t16 = io::read_idx<float, shape<2>>(i16);
    CHECK((t16(0) == -32768.0f && t16(1) == 1234.0f));

    const auto i32 = write("i32", idx_file<std::int32_t>(0x0c, {1, 2}, {-2147483647 - 1, 70000}));
    const auto t32 = io::read_idx<std::int64_t, shape<1, 2>>(i32);
    CHECK((t32(0, 0) == -2147483648LL && t32(0, 1) == 70000));
    CHECK(io::read_idx<double, shape<1, 2>>(i32)(0, 1) == 70000.0);

    const auto f32 = write("f32", idx_file<float>(0x0d, {2, 1, 2}, {1.5f, -0.0f, 3.25e10f, -7.0f}));
    const auto tf = io::read_idx<float, shape<2, 1, 2>>(f32);
    CHECK((tf(0, 0, 0) == 1.5f && tf(1, 0, 0) == 3.25e10f && tf(1, 0, 1) == -7.0f));
    CHECK(io::read_idx<double, shape<2, 1, 2>>(f32)(0, 0, 0) == 1.5);

    const auto f64 = write("f64", idx_file<double>(0x0e, {2}, {0.1, -1e300}));
    const auto td = io::read_idx<double, shape<2>>(f64);
    CHECK((td(0) == 0.1 && td(1) == -1e300));

    const auto scalar = write("scalar", idx_file<float>(0x0d, {}, {42.0f}));
    CHECK(io::read_idx<float, shape<>>(scalar)() == 42.0f);
  }
}

TEST_CASE("read_idx: a tensor filled in place, a prefix of the first axis, from memory", "[idx]") {
  std::vector<std::uint8_t> v(5 * 4);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(3 * i);
  const bytes file = idx_file(0x08, {5, 2, 2}, v);
  const auto path = write_gz("prefix.gz", file);

  Tensor<float, shape<5, 2, 2>> all;
  io::read_idx(path, all);
  CHECK(all(4, 1, 1) == 57.0f);

  const auto first2 = io::read_idx<std::int32_t, shape<2, 2, 2>>(path, io::idx_first_axis::prefix);
  CHECK((first2(0, 0, 0) == 0 && first2(1, 1, 1) == 21));
  CHECK_THROWS_WITH((io::read_idx<std::int32_t, shape<6, 2, 2>>(path, io::idx_first_axis::prefix)),
                    Contains(path) && Contains("axis 0: expected at least 6, found 5"));
  CHECK_THROWS_WITH((io::read_idx<std::int32_t, shape<2, 2, 2>>(path)), Contains("axis 0: expected 2, found 5"));

  Tensor<double, shape<5, 2, 2>> mem;
  io::read_idx_from_bytes(std::as_bytes(std::span(file)), "in memory", mem);
  CHECK(mem(2, 0, 1) == 27.0);
  const bytes zipped = slurp(path);
  io::read_idx_from_bytes(std::as_bytes(std::span(zipped)), "in memory", mem);
  CHECK(mem(2, 0, 1) == 27.0);

  // gzip allows several members one after another (cat a.gz b.gz): they are one stream.
  const bytes half1(file.begin(), file.begin() + 9), half2(file.begin() + 9, file.end());
  bytes two = slurp(write_gz("a.gz", half1));
  const bytes second = slurp(write_gz("b.gz", half2));
  two.insert(two.end(), second.begin(), second.end());
  CHECK_NOTHROW(io::read_idx(write_plain("two_members.gz", two), mem));
  CHECK(mem(4, 1, 1) == 57.0);
}

TEST_CASE("read_idx: files larger than the 64 KiB buffer, elements across its edges", "[idx]") {
  std::vector<float> v(150 * 150);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f - 7.0f;
  const bytes file = idx_file(0x0d, {150, 150}, v); // 90012 bytes: the header shifts elements off 4-byte chunks
  for (bool gz : {false, true}) {
    INFO((gz ? "gzip" : "plain"));
    const auto path = gz ? write_gz("big.gz", file) : write_plain("big", file);
    const auto t = io::read_idx<double, shape<150, 150>>(path);
    CHECK(std::equal(t.begin(), t.end(), v.begin()));
    const auto head = io::read_idx<float, shape<120, 150>>(path, io::idx_first_axis::prefix);
    CHECK(std::equal(head.begin(), head.end(), v.begin()));
    const bytes cut(file.begin(), file.end() - 70001); // (not resize: GCC 12 warns falsely at -O1 with ASan)
    CHECK_THROWS_WITH(
        (io::read_idx<float, shape<150, 150>>(gz ? write_gz("big_cut.gz", cut) : write_plain("big_cut", cut))),
        Contains("truncated data, 19999 of 90000 data bytes"));
  }
}

TEST_CASE("read_idx: every error names the file and what is wrong", "[idx]") {
  using S = shape<2, 3>;
  const bytes good = idx_file<std::uint8_t>(0x08, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto check = [](const std::string& path, const std::string& what) {
    CHECK_THROWS_WITH((io::read_idx<float, S>(path)), Contains("tenfold::io::read_idx: " + path) && Contains(what));
  };
  for (bool gz : {false, true}) {
    INFO((gz ? "gzip" : "plain"));
    const std::string ext = gz ? ".gz" : "";
    auto write = [&](const std::string& name, const bytes& b) {
      return gz ? write_gz(name + ext, b) : write_plain(name, b);
    };
    check(write("empty", {}), "file too short: truncated header, 0 of 4 magic bytes");
    check(write("short_magic", {0, 0, 8}), "truncated header, 3 of 4 magic bytes");
    check(write("magic", {0, 1, 8, 2}),
          gz ? "bad magic: the decompressed data starts with 0x00 0x01" : "bad magic: starts with 0x00 0x01");
    check(write("type", {0, 0, 0x0a, 2}), "unknown type code 0x0a");
    check(write("rank", header(0x08, {6})), "rank 1 in the file, expected 2 (shape [2,3])");
    check(write("short_dims", bytes{0, 0, 8, 2, 0, 0, 0, 2, 0, 0}),
          "truncated header, 6 of the 8 bytes of its extents");
    check(write("axis1", idx_file<std::uint8_t>(0x08, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})),
          "extent of axis 1: expected 3, found 4");
    check(write("axis0", idx_file<std::uint8_t>(0x08, {1, 3}, {1, 2, 3})), "extent of axis 0: expected 2, found 1");
    check(write("overflow", header(0x0e, {0xffffffffu, 0xffffffffu})), "extents overflow");
    bytes truncated = good;
    truncated.pop_back();
    check(write("truncated", truncated), "file too short: truncated data, 5 of 6 data bytes");
    bytes trailing = good;
    trailing.push_back(0);
    check(write("trailing", trailing), "trailing bytes after the data");
    check(write("lossy", idx_file<double>(0x0e, {2, 3}, {1, 2, 3, 4, 5, 6})),
          "holds float64, which float32 cannot represent exactly");
  }
  check(write_plain("not_idx", {'P', 'K', 3, 4}), "not gzip (0x1f 0x8b) and not IDX (0x00 0x00)");
  check((temp_dir() / "does_not_exist").string(), "cannot open: No such file or directory");
  check(temp_dir().string(), "read error");
  CHECK_NOTHROW(io::read_idx<std::int32_t, shape<2>>(write_plain("i32", idx_file<std::int32_t>(0x0c, {2}, {1, 2}))));
  CHECK_THROWS_WITH((io::read_idx<float, shape<2>>(write_plain("i32f", idx_file<std::int32_t>(0x0c, {2}, {1, 2})))),
                    Contains("holds int32, which float32 cannot represent exactly"));

  // A corrupt gzip stream: zlib's own words. Flip a byte in the deflate data, then in the CRC.
  bytes zipped = slurp(write_gz("corrupt_src.gz", good));
  bytes bad_data = zipped, bad_crc = zipped;
  bad_data[10] = 0xff;
  check(write_plain("corrupt.gz", bad_data), "corrupt gzip stream: ");
  bad_crc[bad_crc.size() - 8] ^= 1;
  check(write_plain("crc.gz", bad_crc), "corrupt gzip stream: incorrect data check");
  check(write_plain("cut.gz", bytes(zipped.begin(), zipped.end() - 4)), "corrupt gzip stream: it ends early");
}

TEST_CASE("read_idx: Fashion-MNIST (Debian's dataset-fashion-mnist)", "[idx][dataset]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!fs::exists(dir + "train-images-idx3-ubyte.gz")) {
    WARN("skipped: " << dir << "*.gz are absent (apt-get install dataset-fashion-mnist)");
    return;
  }
  const auto train_labels = io::read_idx<std::int32_t, shape<60000>>(dir + "train-labels-idx1-ubyte.gz");
  // Known facts: 6000 training images per class, and the first labels (ankle boot, T-shirt, T-shirt, ...).
  std::array<int, 10> per_class{};
  int out_of_range = 0;
  for (auto l : train_labels) l >= 0 && l <= 9 ? ++per_class[std::size_t(l)] : ++out_of_range;
  CHECK(out_of_range == 0);
  CHECK(per_class == std::array<int, 10>{6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000});
  CHECK(std::vector<std::int32_t>(train_labels.begin(), train_labels.begin() + 10) ==
        std::vector<std::int32_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5});
  const auto test_labels = io::read_idx<std::int64_t, shape<10000>>(dir + "t10k-labels-idx1-ubyte.gz");
  CHECK(std::vector<std::int64_t>(test_labels.begin(), test_labels.begin() + 10) ==
        std::vector<std::int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7});

  auto train = std::make_unique<Tensor<float, shape<60000, 28, 28>>>();
  io::read_idx(dir + "train-images-idx3-ubyte.gz", *train);
  CHECK(*std::max_element(train->begin(), train->end()) == 255.0f);
  CHECK(*std::min_element(train->begin(), train->end()) == 0.0f);
  // The mean pixel, 0.2860 of 255: the constant everyone normalises Fashion-MNIST with.
  CHECK(std::accumulate(train->begin(), train->end(), 0.0) / (60000.0 * 28 * 28 * 255) == Approx(0.2860).margin(5e-5));
  const auto test = io::read_idx<std::int32_t, shape<10000, 28, 28>>(dir + "t10k-images-idx3-ubyte.gz");
  const auto first =
      io::read_idx<std::int32_t, shape<100, 28, 28>>(dir + "t10k-images-idx3-ubyte.gz", io::idx_first_axis::prefix);
  CHECK(std::equal(first.begin(), first.end(), test.begin()));
}
