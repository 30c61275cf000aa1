#pragma once
// NumPy .npy files: io::save_npy writes a tensor as NumPy's np.save does (byte for byte, format 1.0),
// io::load_npy reads one (format 1.0, 2.0 or 3.0) into a tensor of static shape.
//
// Format: the magic "\x93NUMPY", the version (major, minor), the header length (2 bytes in 1.0, 4 in
// 2.0 and 3.0, little-endian), then the header: a Python dict literal {'descr': '<f4', 'fortran_order':
// False, 'shape': (2, 3), } padded with spaces and a newline so that the data starts 64-byte aligned;
// then the data, row-major.
//
// The header is parsed by hand (it is tiny and fixed-form): the three keys, each once, in any order,
// with any whitespace; descr a plain type ('<' little-endian, '|' or any order for one-byte types; '>'
// big-endian is an error, not a byte swap); fortran_order False only; shape a tuple of non-negative
// integers equal to S. The data must be exactly elements x element size bytes. Conversion: the file's
// type, or one that T holds exactly (io/file_dtype.hpp), never a rounding one. NumPy has no bfloat16:
// save_npy refuses bf16 tensors at compile time.
//
// No dependency beyond POSIX. Errors are tenfold::error, "tenfold::io::npy: <file>: <what is wrong>".
// Nothing read from the file sizes an allocation before it is checked against the file's length.
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "file.hpp"
#include "file_dtype.hpp"

namespace tenfold::io {

namespace detail {
inline constexpr const char* npy_who = "tenfold::io::npy";
inline constexpr std::size_t npy_max_rank = 64; // NumPy 2's limit (1.x: 32)

// A shape as Python prints a tuple: (), (5,), (2, 3).
template <class Extents>
std::string npy_shape_string(const Extents& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) (s += i ? ", " : "") += std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

inline std::string npy_descr(file_dtype d) {
  const auto& i = info(d);
  std::string s(1, i.bytes == 1 ? '|' : '<'); // (not "<" + string: GCC 12's false -Wrestrict, PR 105329)
  return s += i.numpy;
}

struct npy_header {
  file_dtype dtype;
  std::vector<std::uint64_t> shape; // at most npy_max_rank extents
};

// The header's dict literal, as NumPy writes it (and a little more: any key order, whitespace, a
// trailing comma or none, either quote, Python 2's 10L).
class npy_header_parser {
 public:
  npy_header_parser(const std::string& file, std::string_view text) : file_(file), s_(text) {}

  npy_header parse() {
    std::optional<std::string_view> descr;
    std::optional<bool> fortran;
    std::optional<std::vector<std::uint64_t>> shape;
    skip_space();
    expect('{', "the header is not a dict: it does not start with '{'");
    for (skip_space(); !eat('}'); skip_space()) {
      const std::string_view key = string_literal("a key");
      skip_space();
      expect(':', "expected ':' after a key");
      skip_space();
      if (key == "descr") {
        if (descr) twice(key);
        if (peek() == '[') fail("descr is a list: structured dtypes are not supported");
        descr = string_literal("descr");
      } else if (key == "fortran_order") {
        if (fortran) twice(key);
        fortran = boolean();
      } else if (key == "shape") {
        if (shape) twice(key);
        shape = tuple();
      } else {
        fail("unknown key '" + std::string(key) + "' in the header (NumPy writes descr, fortran_order, shape)");
      }
      skip_space();
      if (!eat(',')) {
        expect('}', "expected ',' or '}' in the header's dict");
        break;
      }
    }
    skip_space();
    if (pos_ != s_.size()) fail(at("characters after the header's dict"));
    if (!descr) fail("the header has no 'descr'");
    if (!fortran) fail("the header has no 'fortran_order'");
    if (!shape) fail("the header has no 'shape'");
    if (*fortran)
      fail("fortran_order is True: column-major data is not supported (save np.ascontiguousarray(a) instead)");
    return {dtype(*descr), std::move(*shape)};
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { file_fail(npy_who, file_, what); }
  [[noreturn]] void twice(std::string_view key) const { fail("key '" + std::string(key) + "' twice in the header"); }
  std::string at(const std::string& what) const { return tenfold::detail::message(what, " (header byte ", pos_, ")"); }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c || pos_ == s_.size()) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const std::string& what) {
    if (!eat(c)) fail(at(what));
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }

  std::string_view string_literal(const char* what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(at(std::string(what) + " is not a quoted string"));
    const std::size_t begin = ++pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') fail(at("escapes in strings are not supported"));
      ++pos_;
    }
    if (pos_ == s_.size()) fail(at(std::string(what) + ": the string is not closed"));
    return s_.substr(begin, pos_++ - begin);
  }

  bool boolean() {
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail(at("fortran_order is neither True nor False"));
  }

  std::vector<std::uint64_t> tuple() {
    expect('(', "shape is not a tuple");
    std::vector<std::uint64_t> dims;
    bool comma = false; // seen after the last extent: (3) is an int in Python, (3,) a tuple
    for (skip_space(); !eat(')'); skip_space()) {
      if (peek() < '0' || peek() > '9') fail(at("shape holds something other than a non-negative integer"));
      std::uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9')
        if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, unsigned(s_[pos_++] - '0'), &v))
          fail(at("an extent of shape does not fit in 64 bits"));
      eat('L');
      if (dims.size() == npy_max_rank) fail(tenfold::detail::message("shape has more than ", npy_max_rank, " axes"));
      dims.push_back(v);
      skip_space();
      comma = eat(',');
      if (!comma) {
        expect(')', "expected ',' or ')' in shape");
        break;
      }
    }
    if (dims.size() == 1 && !comma) fail("shape (" + std::to_string(dims[0]) + ") is not a tuple: write (n,)");
    return dims;
  }

  file_dtype dtype(std::string_view descr) const {
    const std::string d(descr);
    const char order = descr.empty() ? '\0' : descr[0];
    const auto type = numpy_dtype(descr.substr(order == '\0' ? 0 : 1));
    if (std::string_view("<>|=").find(order) == std::string_view::npos || !type)
      fail("unsupported descr '" + d + "' (tenfold reads b1, u1, i1, i2, u2, i4, u4, i8, u8, f2, f4, f8)");
    if (info(*type).bytes > 1 && order == '>')
      fail("descr '" + d + "' is big-endian: convert it with a.astype('<" + d.substr(1) + "') first");
    if (info(*type).bytes > 1 && order == '|') fail("descr '" + d + "': '|' (no byte order) is for 1-byte types");
    return *type; // '=' is native, which is little-endian here (file.hpp)
  }

  const std::string& file_;
  std::string_view s_;
  std::size_t pos_ = 0;
};

// Reads the file's elements as T into the memory `place(shape)` returns for the file's shape (it fails
// when it does not take that shape), once the header, the dtype and the file's size are checked.
template <class T, class Place>
void npy_load_into(std::span<const std::byte> b, const std::string& file, Place place) {
  auto fail = [&](const std::string& what) { file_fail(npy_who, file, what); };
  auto byte = [&](std::size_t i) { return std::to_integer<unsigned>(b[i]); };
  constexpr unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  for (std::size_t i = 0; i < sizeof magic && i < b.size(); ++i)
    if (byte(i) != magic[i]) fail("bad magic: not a .npy file (one starts with \\x93NUMPY)");
  if (b.size() < 10)
    fail(tenfold::detail::message("file too short: ", b.size(), " bytes, a .npy file starts with at least 10"));
  const unsigned major = byte(6), minor = byte(7);
  if (major < 1 || major > 3 || minor != 0)
    fail(tenfold::detail::message("format version ", major, ".", minor, " (tenfold reads 1.0, 2.0 and 3.0)"));
  const std::size_t prefix = major == 1 ? 10 : 12;
  if (b.size() < prefix)
    fail(tenfold::detail::message("file too short: ", b.size(), " bytes, a version ", major, " .npy file starts with ",
                                  prefix));
  std::uint64_t header_len = byte(8) | byte(9) << 8;
  if (major > 1) header_len |= std::uint64_t(byte(10)) << 16 | std::uint64_t(byte(11)) << 24;
  if (header_len > b.size() - prefix)
    fail(tenfold::detail::message("header length ", header_len, " runs past the end of the file (", b.size() - prefix,
                                  " bytes follow it)"));
  const std::string_view text(reinterpret_cast<const char*>(b.data() + prefix), static_cast<std::size_t>(header_len));
  const npy_header h = npy_header_parser(file, text).parse();

  const std::string descr = npy_descr(h.dtype);
  std::uint64_t bytes = info(h.dtype).bytes;
  for (const auto d : h.shape)
    if (__builtin_mul_overflow(bytes, d, &bytes))
      fail("shape " + npy_shape_string(h.shape) + " of '" + descr + "' overflows: more than 2^64 bytes");
  if (!converts_exactly<T>(h.dtype)) {
    const auto own = info(file_dtype_of<T>());
    std::string exact;
    for (const auto& d : file_dtypes)
      if (!d.numpy.empty() && d.dtype != own.dtype && converts_exactly<T>(d.dtype))
        (exact += exact.empty() ? "one that " + std::string(dtype_name<T>()) + " holds exactly: " : ", ") +=
            "'" + npy_descr(d.dtype) + "'";
    fail(tenfold::detail::message("dtype '", descr, "' in the file, expected ",
                                  own.numpy.empty() ? "" : "'" + npy_descr(own.dtype) + "' or ", exact,
                                  "; a lossy read is an explicit cast"));
  }
  const std::size_t data = static_cast<std::size_t>(prefix + header_len);
  if (b.size() - data != bytes)
    fail(tenfold::detail::message(b.size() - data < bytes ? "file too short: " : "trailing bytes: ", b.size() - data,
                                  " data bytes, the shape ", npy_shape_string(h.shape), " of '", descr, "' needs ",
                                  bytes));
  T* const dst = place(h.shape); // after the size check: nothing in the header sizes an allocation unchecked
  const std::size_t bad = decode_elements(h.dtype, b.data() + data, dst, static_cast<std::size_t>(bytes / info(h.dtype).bytes));
  if (bad != no_bad_element)
    fail(tenfold::detail::message("bool element ", bad, " is the byte ", byte(data + bad), ", not 0 or 1"));
}

template <class T, class S>
void npy_load(std::span<const std::byte> b, const std::string& file, Tensor<T, S>& out) {
  npy_load_into<T>(b, file, [&](const std::vector<std::uint64_t>& shape) {
    bool same = shape.size() == std::size_t(S::rank);
    for (std::size_t i = 0; same && i < shape.size(); ++i) same = shape[i] == std::uint64_t(S::dims[i]);
    if (!same) file_fail(npy_who, file, "shape " + npy_shape_string(shape) + " in the file, expected " + npy_shape_string(S::dims));
    return out.data();
  });
}
} // namespace detail

// From memory: `name` only labels the errors. What load_npy reads a file with, and what the fuzzer calls.
template <class T, class S>
void load_npy_from_bytes(std::span<const std::byte> bytes, const std::string& name, Tensor<T, S>& out) {
  detail::npy_load(bytes, name, out);
}

template <class T, class S>
void load_npy(const std::string& path, Tensor<T, S>& out) {
  const detail::mapped_file file(detail::npy_who, path);
  detail::npy_load(file.bytes(), path, out);
}

template <class T, class S>
Tensor<T, S> load_npy(const std::string& path) {
  Tensor<T, S> out;
  load_npy(path, out);
  return out;
}

// An array whose shape is known at run time only: its extents and its row-major elements as T (the
// file's dtype T's, or one T holds exactly, as for a tensor).
template <class T>
struct npy_array {
  std::vector<index_t> shape;
  std::vector<T> data;
};
template <class T>
npy_array<T> load_npy_array(const std::string& path) {
  const detail::mapped_file file(detail::npy_who, path);
  npy_array<T> out;
  detail::npy_load_into<T>(file.bytes(), path, [&](const std::vector<std::uint64_t>& shape) {
    std::size_t n = 1;
    for (const auto d : shape) {
      if (d > std::uint64_t(std::numeric_limits<index_t>::max()) || __builtin_mul_overflow(n, std::size_t(d), &n))
        detail::file_fail(detail::npy_who, path, "shape " + detail::npy_shape_string(shape) + " is too large");
      out.shape.push_back(index_t(d));
    }
    out.data.resize(n); // the file holds these elements: its size was checked against the header first
    return out.data.data();
  });
  return out;
}

namespace detail {
template <class T, class Dims>
void write_npy(const std::string& path, const Dims& dims, const T* data, std::size_t count) {
  std::string header = "{'descr': '" + npy_descr(file_dtype_of<T>()) +
                       "', 'fortran_order': False, 'shape': " + npy_shape_string(dims) + ", }";
  // NumPy (1.24 on) leaves room for the first extent to grow to 21 digits, then pads with spaces to
  // end the header with '\n' on a 64-byte boundary (1 to 64 spaces).
  if (!dims.empty()) header.append(21 - std::to_string(dims[0]).size(), ' ');
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  const auto len = static_cast<std::uint16_t>(header.size()); // at most ~1 KiB for 8 axes
  const unsigned char prefix[10] = {0x93,
                                    'N',
                                    'U',
                                    'M',
                                    'P',
                                    'Y',
                                    1,
                                    0,
                                    static_cast<unsigned char>(len & 0xff),
                                    static_cast<unsigned char>(len >> 8)};
  atomic_file_writer out(npy_who, path);
  out.add(prefix, sizeof prefix);
  out.add(header.data(), header.size());
  out.add(data, sizeof(T) * count);
  out.commit();
}
} // namespace detail

// Writes what np.save writes for the same array (format 1.0), to path + ".tmp", then renames it.
template <class T, class S>
void save_npy(const std::string& path, const Tensor<T, S>& t) {
  static_assert(!std::is_same_v<T, bf16>, "tenfold::io::save_npy: NumPy has no bfloat16 type: save a float "
                                          "tensor (tenfold::cast<float>) or use safetensors");
  detail::write_npy(path, S::dims, t.data(), static_cast<std::size_t>(S::size));
}

// The same for row-major data whose shape is known at run time only (data.size() must be the
// product of the extents).
template <class T>
void save_npy(const std::string& path, std::span<const T> data, const std::vector<index_t>& shape) {
  static_assert(!std::is_same_v<T, bf16>, "tenfold::io::save_npy: NumPy has no bfloat16 type: save float data "
                                          "or use safetensors");
  std::size_t count = 1;
  for (const index_t d : shape) {
    if (d < 0) detail::file_fail(detail::npy_who, path, tenfold::detail::message("negative extent ", d, " in the shape to save"));
    count *= static_cast<std::size_t>(d);
  }
  if (count != data.size())
    detail::file_fail(detail::npy_who, path,
                      tenfold::detail::message("the shape ", detail::npy_shape_string(shape), " holds ", count,
                                               " elements, the data ", data.size()));
  detail::write_npy(path, shape, data.data(), count);
}

} // namespace tenfold::io
