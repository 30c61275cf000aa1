#pragma once
// safetensors files (Hugging Face's weight format): read memory-mapped and validated, and written.
//
// Format: an 8-byte little-endian header length n, n bytes of UTF-8 JSON, then the data buffer. The
// JSON is an object: each tensor's name maps to {"dtype": "F32", "shape": [2, 3], "data_offsets":
// [begin, end]} (offsets into the data buffer, little-endian row-major elements), and an optional
// "__metadata__" maps strings to strings.
//
// Validation (as the reference reader, and stricter where it is silent): n at most 100,000,000 and not
// past the file; the header UTF-8, a JSON object with no key twice at any level; known dtypes (BOOL, U8,
// I8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64); shapes of non-negative integers; a tensor's
// byte count (overflow-checked) equal to end - begin; the tensors, sorted by offset, covering the data
// buffer from 0 to its last byte with no gap or overlap; no other key in a tensor's object. A BOOL
// element must be 0 or 1 (checked when read).
//
// Conversion: read() accepts the tensor's own dtype or one that T holds exactly (io/file_dtype.hpp:
// BF16/F16/F32 -> float/double, small integers -> wider ones ...), never a rounding one.
//
// Needs nlohmann-json (Debian nlohmann-json3-dev; CMake nlohmann_json::nlohmann_json); tenfold.hpp does
// not include this header, so the core does not. Errors are tenfold::error, "tenfold::io::safetensors:
// <file>: <what is wrong>". Nothing read from the file sizes an allocation before it is checked against
// the file's length.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../core/tensor_map.hpp"
#include "file.hpp"
#include "file_dtype.hpp"

namespace tenfold::io {

namespace detail {
inline constexpr const char* safetensors_who = "tenfold::io::safetensors";
inline constexpr std::uint64_t safetensors_max_header = 100'000'000;

// The offset of the first byte that breaks UTF-8 (overlong forms, surrogates and code points past
// U+10FFFF included), or s.size() when there is none.
inline std::size_t utf8_error(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned lo = 0x80, hi = 0xbf; // the range of the second byte
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else return i;
    if (s.size() - i < len) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) return i;
    }
    i += len;
  }
  return s.size();
}

struct safetensors_entry {
  std::string name;
  file_dtype dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin, end;
};

inline std::string shape_string(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) (s += i ? "," : "") += std::to_string(shape[i]);
  return s + "]";
}

inline const char* json_kind(const nlohmann::json& j) {
  return j.is_number_float()      ? "a non-integer number"
         : j.is_number_unsigned() ? "an integer"
         : j.is_number_integer()  ? "a negative integer"
                                  : j.type_name();
}
} // namespace detail

class safetensors_file {
 public:
  // Maps the file read-only and validates all of it; the mapping lives as long as this object (and its
  // copies).
  explicit safetensors_file(const std::string& path)
      : file_(path), map_(std::make_shared<const detail::mapped_file>(detail::safetensors_who, path)) {
    parse(map_->bytes());
  }

  // From memory, which must outlive the returned object: `name` only labels the errors. What the fuzzer
  // calls.
  static safetensors_file from_bytes(std::span<const std::byte> bytes, std::string name = "<memory>") {
    return safetensors_file(std::move(name), bytes);
  }

  // Tensor names in file order (by data offset).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& t : tensors_) out.push_back(t.name);
    return out;
  }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(std::string_view name) const { return index_.find(name) != index_.end(); }

  // The file's path (or from_bytes' name): what its errors name.
  const std::string& path() const { return file_; }
  // The tensor's shape and dtype name ("F32", ...) in the file.
  std::vector<std::uint64_t> shape(std::string_view name) const { return find(name).shape; }
  std::string dtype(std::string_view name) const { return std::string(detail::info(find(name).dtype).safetensors); }

  // Copies the tensor `name` into `out`: its shape must be S, its dtype T's or one T holds exactly.
  template <class T, class S>
  void read(std::string_view name, Tensor<T, S>& out) const {
    read_into(name, out);
  }
  template <class T, class S>
    requires(!std::is_const_v<T>)
  void read(std::string_view name, TensorMap<T, S> out) const {
    read_into(name, out);
  }

  // The tensor `name` where it lies in the mapped file, without a copy: its shape must be S and its
  // dtype T's, and its first byte aligned for T (the reference writer pads the header so that the data
  // buffer starts 8-byte aligned, and tensors of one dtype keep their alignment). viewable() says
  // whether that holds; view() fails naming the reason when it does not (read() then copies). The
  // view reads the mapping: this object (or a copy of it) must outlive it.
  template <class T, class S>
  bool viewable(std::string_view name) const {
    const detail::safetensors_entry& t = find(name);
    return same_shape<S>(t) && t.dtype == detail::file_dtype_of<T>() && aligned<T>(t);
  }
  template <class T, class S>
  TensorMap<const T, S> view(std::string_view name) const {
    const detail::safetensors_entry& t = find(name);
    check_shape<T, S>(t);
    if (t.dtype != detail::file_dtype_of<T>())
      fail(tenfold::detail::message("tensor '", t.name, "': dtype ", detail::info(t.dtype).safetensors,
                                    " in the file, a view needs ", detail::info(detail::file_dtype_of<T>()).safetensors,
                                    " (read() converts)"));
    if (!aligned<T>(t))
      fail(tenfold::detail::message("tensor '", t.name, "': its data is not aligned to ", alignof(T),
                                    " bytes in the file, so it cannot be viewed (read() copies)"));
    return TensorMap<const T, S>(reinterpret_cast<const T*>(data_.data() + t.begin));
  }

 private:
  template <class S>
  static bool same_shape(const detail::safetensors_entry& t) {
    bool same = t.shape.size() == std::size_t(S::rank);
    for (std::size_t i = 0; same && i < t.shape.size(); ++i) same = t.shape[i] == std::uint64_t(S::dims[i]);
    return same;
  }
  template <class T, class S>
  void check_shape(const detail::safetensors_entry& t) const {
    if (!same_shape<S>(t))
      fail(tenfold::detail::message("tensor '", t.name, "': shape ", detail::shape_string(t.shape),
                                    " in the file, expected ", Tensor<T, S>::shape_string()));
  }
  template <class T>
  bool aligned(const detail::safetensors_entry& t) const {
    return reinterpret_cast<std::uintptr_t>(data_.data() + t.begin) % alignof(T) == 0;
  }

  template <class Out>
  void read_into(std::string_view name, Out& out) const {
    using T = typename Out::value_type;
    using S = typename Out::shape_type;
    const detail::safetensors_entry& t = find(name);
    check_shape<T, S>(t);
    if (!detail::converts_exactly<T>(t.dtype)) {
      std::string exact;
      for (const auto& d : detail::file_dtypes)
        if (d.dtype != detail::file_dtype_of<T>() && detail::converts_exactly<T>(d.dtype))
          (exact += exact.empty() ? " (or one that " + std::string(dtype_name<T>()) + " holds exactly: " : ", ") +=
              d.safetensors;
      fail(tenfold::detail::message("tensor '", t.name, "': dtype ", detail::info(t.dtype).safetensors,
                                    " in the file, expected ", detail::info(detail::file_dtype_of<T>()).safetensors,
                                    exact, exact.empty() ? "" : ")", "; a lossy read is an explicit cast"));
    }
    const std::size_t bad =
        detail::decode_elements(t.dtype, data_.data() + t.begin, out.data(), static_cast<std::size_t>(S::size));
    if (bad != detail::no_bad_element)
      fail(tenfold::detail::message("tensor '", t.name, "': BOOL element ", bad, " is the byte ",
                                    std::to_integer<unsigned>(data_[t.begin + bad]), ", not 0 or 1"));
  }

  safetensors_file(std::string name, std::span<const std::byte> bytes) : file_(std::move(name)) { parse(bytes); }

  [[noreturn]] void fail(const std::string& what) const { detail::file_fail(detail::safetensors_who, file_, what); }

  [[noreturn]] void fail_tensor(const std::string& name, const std::string& what) const {
    fail(tenfold::detail::message("tensor '", name, "': ", what));
  }

  const detail::safetensors_entry& find(std::string_view name) const {
    const auto it = index_.find(name);
    if (it != index_.end()) return tensors_[it->second];
    std::string some;
    for (std::size_t i = 0; i < tensors_.size() && i < 8; ++i) (some += i ? ", " : "") += tensors_[i].name;
    fail(tenfold::detail::message("no tensor named '", name, "' (the file has ", tensors_.size(), " tensors",
                                  tensors_.empty() ? "" : ": ", some, tensors_.size() > 8 ? ", ..." : "", ")"));
  }

  void parse(std::span<const std::byte> b) {
    if (b.size() < 8)
      fail(tenfold::detail::message("file too short: ", b.size(),
                                    " bytes, less than the 8-byte header length a safetensors file starts with"));
    std::uint64_t n;
    std::memcpy(&n, b.data(), 8);
    if (n > detail::safetensors_max_header)
      fail(tenfold::detail::message("header length ", n, " exceeds the limit of ", detail::safetensors_max_header,
                                    " bytes (not a safetensors file?)"));
    if (n > b.size() - 8)
      fail(tenfold::detail::message("header length ", n, " runs past the end of the file (", b.size() - 8,
                                    " bytes follow the length)"));
    const std::string_view header(reinterpret_cast<const char*>(b.data() + 8), static_cast<std::size_t>(n));
    if (const std::size_t bad = detail::utf8_error(header); bad != header.size())
      fail(tenfold::detail::message("the header is not UTF-8 (byte ", bad, " of the header)"));

    // Duplicate keys: nlohmann keeps the last silently, so the parser's key events are watched.
    std::vector<std::set<std::string>> open_objects;
    std::string duplicate;
    bool duplicate_top = false;
    auto watch = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      using ev = nlohmann::json::parse_event_t;
      if (event == ev::object_start) open_objects.emplace_back();
      else if (event == ev::object_end && !open_objects.empty()) open_objects.pop_back();
      else if (event == ev::key && !open_objects.empty() && duplicate.empty() &&
               !open_objects.back().insert(parsed.get<std::string>()).second)
        duplicate = parsed.get<std::string>(), duplicate_top = open_objects.size() == 1;
      return true;
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(header, watch);
    } catch (const nlohmann::json::exception& e) {
      std::string_view what = e.what(); // "[json.exception.parse_error.101] parse error at ..."
      if (const auto k = what.find("] "); k != what.npos) what.remove_prefix(k + 2);
      fail(tenfold::detail::message("the header is not valid JSON: ", what));
    }
    if (!duplicate.empty())
      fail(duplicate_top ? tenfold::detail::message("duplicate tensor name '", duplicate, "' in the header")
                         : tenfold::detail::message("duplicate key '", duplicate, "' in the header"));
    if (!j.is_object()) fail(tenfold::detail::message("the header is a JSON ", j.type_name(), ", not an object"));

    for (const auto& [name, value] : j.items()) {
      if (name == "__metadata__") read_metadata(value);
      else tensors_.push_back(read_entry(name, value));
    }
    std::sort(tensors_.begin(), tensors_.end(), [](const auto& x, const auto& y) {
      return std::tie(x.begin, x.end, x.name) < std::tie(y.begin, y.end, y.name);
    });
    const std::uint64_t buffer = b.size() - 8 - n;
    std::uint64_t covered = 0;
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      const auto& t = tensors_[i];
      if (t.begin > covered)
        fail(tenfold::detail::message("gap in the data buffer: bytes [", covered, ", ", t.begin,
                                      ") belong to no tensor (before tensor '", t.name, "')"));
      if (t.begin < covered)
        fail(tenfold::detail::message("tensor '", t.name, "' overlaps tensor '", tensors_[i - 1].name,
                                      "': its data_offsets begin at ", t.begin, ", before ", covered));
      covered = t.end;
    }
    if (covered > buffer)
      fail(tenfold::detail::message("tensor '", tensors_.back().name,
                                    "' runs past the end of the file: its data ends at ", covered,
                                    ", the data buffer has ", buffer, " bytes"));
    if (covered < buffer)
      fail(tenfold::detail::message("trailing bytes: the data buffer has ", buffer, " bytes, the tensors cover ",
                                    covered));
    data_ = b.subspan(static_cast<std::size_t>(8 + n));
    for (std::size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
  }

  void read_metadata(const nlohmann::json& value) {
    if (value.is_null()) return; // the reference reader takes null for no metadata
    if (!value.is_object())
      fail(tenfold::detail::message("__metadata__ is ", detail::json_kind(value), ", not an object of strings"));
    for (const auto& [key, v] : value.items()) {
      if (!v.is_string())
        fail(tenfold::detail::message("__metadata__['", key, "'] is ", detail::json_kind(v), ", not a string"));
      metadata_.emplace(key, v.get<std::string>());
    }
  }

  detail::safetensors_entry read_entry(const std::string& name, const nlohmann::json& value) const {
    if (!value.is_object())
      fail_tensor(name, tenfold::detail::message("its entry is ", detail::json_kind(value), ", not an object"));
    for (const auto& [key, v] : value.items())
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        fail_tensor(name, "unknown key '" + key + "' (a tensor has dtype, shape and data_offsets)");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!value.contains(key)) fail_tensor(name, tenfold::detail::message("no ", key));

    const auto& dtype = value["dtype"];
    if (!dtype.is_string())
      fail_tensor(name, tenfold::detail::message("dtype is ", detail::json_kind(dtype), ", not a string"));
    const auto d = detail::safetensors_dtype(dtype.get<std::string>());
    if (!d)
      fail_tensor(name, "unknown dtype '" + dtype.get<std::string>() +
                            "' (known: BOOL, U8, I8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64)");

    detail::safetensors_entry e{name, *d, {}, 0, 0};
    const auto& shape = value["shape"];
    if (!shape.is_array())
      fail_tensor(name, tenfold::detail::message("shape is ", detail::json_kind(shape), ", not an array"));
    std::uint64_t bytes = detail::info(*d).bytes;
    bool overflow = false;
    for (const auto& x : shape) {
      if (!x.is_number_unsigned())
        fail_tensor(name,
                    tenfold::detail::message("shape holds ", detail::json_kind(x), ", not a non-negative integer"));
      e.shape.push_back(x.get<std::uint64_t>());
      overflow = overflow || __builtin_mul_overflow(bytes, e.shape.back(), &bytes);
    }
    const auto& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      fail_tensor(name, "data_offsets is not [begin, end] (two non-negative integers)");
    e.begin = offsets[0].get<std::uint64_t>(), e.end = offsets[1].get<std::uint64_t>();
    if (overflow) fail_tensor(name, "shape " + detail::shape_string(e.shape) + " overflows: more than 2^64 bytes");
    if (e.end < e.begin)
      fail_tensor(name, tenfold::detail::message("data_offsets [", e.begin, ", ", e.end, "] end before they begin"));
    if (e.end - e.begin != bytes)
      fail_tensor(name, tenfold::detail::message("data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin,
                                                 " bytes, its shape ", detail::shape_string(e.shape), " of ",
                                                 dtype.get<std::string>(), " needs ", bytes));
    return e;
  }

  std::string file_;
  std::shared_ptr<const detail::mapped_file> map_; // empty for from_bytes
  std::span<const std::byte> data_;                // the data buffer
  std::vector<detail::safetensors_entry> tensors_; // by data offset
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

// Collects tensors (copies of their bytes) and metadata, then writes one safetensors file.
class safetensors_writer {
 public:
  template <class T, class S>
  void add(std::string name, const Tensor<T, S>& t) {
    if (name == "__metadata__") fail("'__metadata__' is reserved, not a tensor name");
    check_utf8("tensor name", name);
    for (const auto& e : entries_)
      if (e.name == name) fail("tensor '" + name + "' added twice");
    entry e{std::move(name), detail::file_dtype_of<T>(), {}, {}};
    for (const auto d : S::dims) e.shape.push_back(static_cast<std::uint64_t>(d));
    const auto* p = reinterpret_cast<const std::byte*>(t.data());
    e.bytes.assign(p, p + sizeof(T) * static_cast<std::size_t>(S::size));
    entries_.push_back(std::move(e));
  }

  // Sets one metadata entry (a second call with the same key replaces the value).
  void metadata(std::string key, std::string value) {
    check_utf8("metadata key", key);
    check_utf8("metadata value", value);
    metadata_[std::move(key)] = std::move(value);
  }

  // Writes path + ".tmp", then renames it to path.
  void write(const std::string& path) const {
    nlohmann::json header = nlohmann::json::object();
    if (!metadata_.empty()) header["__metadata__"] = metadata_;
    std::uint64_t offset = 0;
    for (const auto& e : entries_) {
      header[e.name] = {{"dtype", detail::info(e.dtype).safetensors},
                        {"shape", e.shape},
                        {"data_offsets", {offset, offset + e.bytes.size()}}};
      offset += e.bytes.size();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' '); // the data buffer starts 8-byte aligned, as the reference pads
    const std::uint64_t n = text.size();
    detail::atomic_file_writer out(detail::safetensors_who, path);
    out.add(&n, 8);
    out.add(text.data(), text.size());
    for (const auto& e : entries_) out.add(e.bytes.data(), e.bytes.size());
    out.commit();
  }

 private:
  struct entry {
    std::string name;
    detail::file_dtype dtype;
    std::vector<std::uint64_t> shape;
    std::vector<std::byte> bytes;
  };

  [[noreturn]] static void fail(const std::string& what) {
    throw tenfold::error("tenfold::io::safetensors_writer: " + what);
  }
  static void check_utf8(const char* what, const std::string& s) {
    if (detail::utf8_error(s) != s.size()) fail(tenfold::detail::message(what, " '", s, "' is not UTF-8"));
  }

  std::vector<entry> entries_;
  std::map<std::string, std::string> metadata_;
};

} // namespace tenfold::io
