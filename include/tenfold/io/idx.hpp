#pragma once
// IDX files (MNIST, Fashion-MNIST), plain or gzip-compressed, read into a tensor of static shape.
//
// Format: 2 zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32,
// 0x0E float64), the rank (1 byte), each extent as a big-endian uint32, then the data, big-endian and
// row-major. A file starting with gzip's magic (1f 8b) is inflated on the fly (also several members).
//
// Conversion: each element becomes a T by static_cast, and only when every value of the file's type
// is exactly representable in T, one of float, double, int32_t, int64_t (uint8, int8, int16 -> any;
// int32 -> double, int32, int64; float32 -> float, double; float64 -> double). Anything else is an error naming both
// types: a lossy read should be an explicit cast by the caller, not a silent rounding here.
//
// Needs zlib (link ZLIB::ZLIB); tenfold.hpp does not include this header, so the core does not.
// Errors are tenfold::error, "tenfold::io::read_idx: <file>: <what is wrong>". Nothing read from the
// file sizes an allocation: the data streams through a 64 KiB buffer straight into the tensor, and on
// an error the tensor's contents are unspecified.
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/error.hpp"
#include "../core/tensor.hpp"

namespace tenfold::io {

// The first axis of the file: exactly S's first extent, or at least that many (a prefix: the first
// N images of 60000). A prefix stops reading there, so what follows it in the file is not checked.
enum class idx_first_axis { exact, prefix };

// The element types an IDX file's values convert to exactly (bool, bf16 and f16 would round or clip).
template <class T>
concept idx_element = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t>;

namespace detail {
inline constexpr std::size_t idx_chunk_bytes = 64 * 1024;

[[noreturn]] inline void idx_fail(const std::string& name, const std::string& what) {
  throw tenfold::error(tenfold::detail::message("tenfold::io::read_idx: ", name, ": ", what));
}

inline std::string idx_hex(unsigned v) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%02x", v & 0xffu);
  return s;
}

// Decoded bytes of an IDX file: raw bytes from a file (read in chunks) or from memory, inflated by
// zlib when they start with gzip's magic. read() returns fewer bytes than asked only at the end.
class idx_stream {
 public:
  idx_stream(std::string name, std::FILE* file) : name_(std::move(name)), file_(file), in_(idx_chunk_bytes) { sniff(); }
  idx_stream(std::string name, std::span<const std::byte> bytes)
      : name_(std::move(name)), next_(reinterpret_cast<const unsigned char*>(bytes.data())), avail_(bytes.size()) {
    sniff();
  }
  idx_stream(const idx_stream&) = delete;
  idx_stream& operator=(const idx_stream&) = delete;
  ~idx_stream() {
    if (gzip_) inflateEnd(&z_);
  }

  bool gzip() const { return gzip_; }
  const std::string& name() const { return name_; }

  std::size_t read(unsigned char* dst, std::size_t n) { return gzip_ ? inflate_into(dst, n) : copy_into(dst, n); }

 private:
  // Raw input: the next chunk of the file; a memory source is one chunk, given at construction.
  bool refill() {
    if (avail_ > 0) return true;
    if (!file_) return false;
    avail_ = std::fread(in_.data(), 1, in_.size(), file_);
    next_ = in_.data();
    if (std::ferror(file_)) idx_fail(name_, tenfold::detail::message("read error: ", std::strerror(errno)));
    return avail_ > 0;
  }

  void sniff() {
    if (file_) refill(); // fread fills the chunk unless the file is shorter: 2 bytes are there if it has them
    gzip_ = avail_ >= 2 && next_[0] == 0x1f && next_[1] == 0x8b;
    if (gzip_ && inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) idx_fail(name_, "zlib cannot start (out of memory?)");
  }

  std::size_t copy_into(unsigned char* dst, std::size_t n) {
    std::size_t got = 0;
    while (got < n && refill()) {
      const std::size_t k = std::min(n - got, avail_);
      std::memcpy(dst + got, next_, k);
      got += k, next_ += k, avail_ -= k;
    }
    return got;
  }

  std::size_t inflate_into(unsigned char* dst, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      if (!refill()) {
        if (!member_ended_) idx_fail(name_, "corrupt gzip stream: it ends early (unexpected end of file)");
        break;
      }
      if (member_ended_) { // more bytes after a member: gzip allows another one (as gunzip does)
        inflateReset(&z_);
        member_ended_ = false;
      }
      // zlib counts in uInt: hand it at most a chunk at a time, whatever the source's size.
      const uInt in = static_cast<uInt>(std::min(avail_, idx_chunk_bytes));
      const uInt out = static_cast<uInt>(std::min(n - got, idx_chunk_bytes));
      z_.next_in = const_cast<Bytef*>(next_);
      z_.avail_in = in;
      z_.next_out = dst + got;
      z_.avail_out = out;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      const std::size_t used = in - z_.avail_in, made = out - z_.avail_out;
      next_ += used, avail_ -= used, got += made;
      if (rc == Z_STREAM_END) member_ended_ = true;
      else if (rc == Z_BUF_ERROR && used == 0 && made == 0) idx_fail(name_, "corrupt gzip stream: no progress");
      else if (rc != Z_OK && rc != Z_BUF_ERROR)
        idx_fail(name_, tenfold::detail::message("corrupt gzip stream: ", z_.msg ? z_.msg : "zlib error ",
                                                 z_.msg ? "" : std::to_string(rc)));
    }
    return got;
  }

  std::string name_;
  std::FILE* file_ = nullptr;
  std::vector<unsigned char> in_;
  const unsigned char* next_ = nullptr;
  std::size_t avail_ = 0;
  bool gzip_ = false, member_ended_ = false;
  z_stream z_{};
};

struct idx_type {
  unsigned code;
  const char* name;
  unsigned bytes;
};
inline constexpr idx_type idx_types[] = {{0x08, "uint8", 1}, {0x09, "int8", 1},    {0x0b, "int16", 2},
                                         {0x0c, "int32", 4}, {0x0d, "float32", 4}, {0x0e, "float64", 8}};

// Whether every value of From is exactly a value of To.
template <class From, class To>
consteval bool idx_exact() {
  using F = std::numeric_limits<From>;
  using D = std::numeric_limits<To>;
  if constexpr (std::is_integral_v<From> && std::is_integral_v<To>)
    return std::intmax_t(D::min()) <= std::intmax_t(F::min()) && std::uintmax_t(D::max()) >= std::uintmax_t(F::max());
  else if constexpr (std::is_integral_v<From>) return F::digits <= D::digits;
  else
    return std::is_floating_point_v<To> && F::digits <= D::digits && F::max_exponent <= D::max_exponent &&
           F::min_exponent >= D::min_exponent;
}

// One big-endian element.
template <class From>
From idx_decode(const unsigned char* p) {
  using U = std::conditional_t<sizeof(From) == 1, std::uint8_t,
                               std::conditional_t<sizeof(From) == 2, std::uint16_t,
                                                  std::conditional_t<sizeof(From) == 4, std::uint32_t, std::uint64_t>>>;
  U u = 0;
  for (std::size_t i = 0; i < sizeof(From); ++i) u = static_cast<U>((u << 8) | p[i]);
  return std::bit_cast<From>(u);
}

template <class From, class T>
void idx_read_data(idx_stream& s, T* out, std::size_t n, const char* file_type) {
  if constexpr (idx_exact<From, T>()) {
    constexpr std::size_t per_chunk = idx_chunk_bytes / sizeof(From);
    std::vector<unsigned char> buf(std::min(n, per_chunk) * sizeof(From));
    for (std::size_t done = 0; done < n;) {
      const std::size_t k = std::min(n - done, per_chunk);
      const std::size_t got = s.read(buf.data(), k * sizeof(From));
      if (got < k * sizeof(From))
        idx_fail(s.name(), tenfold::detail::message("file too short: truncated data, ", done * sizeof(From) + got,
                                                    " of ", n * sizeof(From), " data bytes"));
      for (std::size_t i = 0; i < k; ++i)
        out[done + i] = static_cast<T>(idx_decode<From>(buf.data() + i * sizeof(From)));
      done += k;
    }
  } else {
    (void)out, (void)n;
    idx_fail(s.name(), tenfold::detail::message("the file holds ", file_type, ", which ", dtype_name<T>(),
                                                " cannot represent exactly (read it as a wider type)"));
  }
}

template <class T, class S>
void idx_read(idx_stream& s, Tensor<T, S>& out, idx_first_axis first) {
  const std::string& name = s.name();
  unsigned char head[4];
  const std::size_t got = s.read(head, 4);
  if (got >= 2 && (head[0] != 0 || head[1] != 0))
    idx_fail(name, s.gzip()
                       ? tenfold::detail::message("bad magic: the decompressed data starts with ", idx_hex(head[0]),
                                                  " ", idx_hex(head[1]), ", not IDX's 0x00 0x00")
                       : tenfold::detail::message("bad magic: starts with ", idx_hex(head[0]), " ", idx_hex(head[1]),
                                                  ", not gzip (0x1f 0x8b) and not IDX (0x00 0x00)"));
  if (got < 4) idx_fail(name, tenfold::detail::message("file too short: truncated header, ", got, " of 4 magic bytes"));
  const idx_type* type =
      std::find_if(std::begin(idx_types), std::end(idx_types), [&](const idx_type& t) { return t.code == head[2]; });
  if (type == std::end(idx_types))
    idx_fail(name, "unknown type code " + idx_hex(head[2]) + " (IDX knows 0x08 0x09 0x0b 0x0c 0x0d 0x0e)");
  if (head[3] != S::rank)
    idx_fail(name, tenfold::detail::message("rank ", unsigned(head[3]), " in the file, expected ", S::rank, " (shape ",
                                            out.shape_string(), ")"));

  // Extents (at most 8 of them: the rank matches S's). Their product is checked before any is trusted.
  constexpr std::size_t rank = S::rank;
  unsigned char dims_raw[4 * (rank > 0 ? rank : 1)];
  const std::size_t dims_got = s.read(dims_raw, 4 * rank);
  if (dims_got < 4 * rank)
    idx_fail(name, tenfold::detail::message("file too short: truncated header, ", dims_got, " of the ", 4 * S::rank,
                                            " bytes of its extents"));
  std::uint64_t dims[rank > 0 ? rank : 1], bytes = type->bytes;
  for (std::size_t i = 0; i < rank; ++i) {
    dims[i] = idx_decode<std::uint32_t>(dims_raw + 4 * i);
    if (__builtin_mul_overflow(bytes, dims[i], &bytes))
      idx_fail(name, "the header's extents overflow: their product times the element size exceeds 2^64 bytes");
  }
  for (std::size_t i = 0; i < rank; ++i) {
    const auto want = static_cast<std::uint64_t>(S::dims[i]);
    if (i == 0 && first == idx_first_axis::prefix ? dims[i] < want : dims[i] != want)
      idx_fail(name, tenfold::detail::message("extent of axis ", i, ": expected ",
                                              i == 0 && first == idx_first_axis::prefix ? "at least " : "", want,
                                              ", found ", dims[i], " (shape ", out.shape_string(), ")"));
  }

  const auto n = static_cast<std::size_t>(S::size);
  switch (type->code) {
  case 0x08:
    idx_read_data<std::uint8_t>(s, out.data(), n, type->name);
    break;
  case 0x09:
    idx_read_data<std::int8_t>(s, out.data(), n, type->name);
    break;
  case 0x0b:
    idx_read_data<std::int16_t>(s, out.data(), n, type->name);
    break;
  case 0x0c:
    idx_read_data<std::int32_t>(s, out.data(), n, type->name);
    break;
  case 0x0d:
    idx_read_data<float>(s, out.data(), n, type->name);
    break;
  default:
    idx_read_data<double>(s, out.data(), n, type->name);
    break;
  }
  unsigned char extra;
  if (first == idx_first_axis::exact && s.read(&extra, 1) == 1)
    idx_fail(name, tenfold::detail::message("trailing bytes after the data (", bytes, " data bytes expected)"));
}
} // namespace detail

// From memory: `name` only labels the errors. What read_idx reads a file with, and what the fuzzer calls.
template <idx_element T, class S>
void read_idx_from_bytes(std::span<const std::byte> bytes, const std::string& name, Tensor<T, S>& out,
                         idx_first_axis first = idx_first_axis::exact) {
  detail::idx_stream s(name, bytes);
  detail::idx_read(s, out, first);
}

template <idx_element T, class S>
void read_idx(const std::string& path, Tensor<T, S>& out, idx_first_axis first = idx_first_axis::exact) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) detail::idx_fail(path, tenfold::detail::message("cannot open: ", std::strerror(errno)));
  detail::idx_stream s(path, file.get());
  detail::idx_read(s, out, first);
}

template <idx_element T, class S>
Tensor<T, S> read_idx(const std::string& path, idx_first_axis first = idx_first_axis::exact) {
  Tensor<T, S> out;
  read_idx(path, out, first);
  return out;
}

} // namespace tenfold::io
