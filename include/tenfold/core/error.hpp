#pragma once
// Run-time errors (bad files, bad sizes, bad indices) are reported as tenfold::error, never as UB.
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tenfold {
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
// A message built by appending its parts (text, or numbers). Not `"text " + std::to_string(n)`: on
// that, GCC 12 warns falsely in libstdc++'s prepend [-Wrestrict], in every user's build at -O3.
template <class... Parts>
std::string message(const Parts&... parts) {
  std::string s;
  auto append = [&s](const auto& part) {
    if constexpr (std::is_arithmetic_v<std::remove_cvref_t<decltype(part)>>) s += std::to_string(part);
    else s += part;
  };
  (append(parts), ...);
  return s;
}
} // namespace detail
} // namespace tenfold
