#pragma once
// The checks of the MPI test programs (plain programs run under mpirun, not Catch2): every rank runs
// them, and a failed one throws tenfold::error naming the check and the line, which main turns into
// abort() (ending every rank).
#include <cstdio>
#include <string>

#include <tenfold/core/error.hpp>

namespace dist_check {
inline int checks = 0;
// Does f() throw a tenfold::error whose message contains text?
template <class F>
bool throws_containing(F&& f, const std::string& text) {
  try {
    f();
  } catch (const tenfold::error& e) {
    if (std::string(e.what()).find(text) != std::string::npos) return true;
    std::fprintf(stderr, "unexpected message: %s\n", e.what());
    return false;
  }
  return false;
}
} // namespace dist_check

#define CHECK(cond)                                                                                                    \
  do {                                                                                                                 \
    ++dist_check::checks;                                                                                              \
    if (!(cond))                                                                                                       \
      throw tenfold::error(std::string("check failed: ") + #cond + " (line " + std::to_string(__LINE__) + ")");        \
  } while (0)
