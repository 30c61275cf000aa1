#pragma once
// Run-time errors (bad files, bad sizes, bad indices) are reported as tenfold::error, never as UB.
#include <stdexcept>
#include <string>

namespace tenfold {
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
} // namespace tenfold
