// tools:tune_agree: what tenfold_tune --runs keeps of several runs (tools/tune/agree.hpp).
#include <cstdio>
#include <string>
#include <vector>

#include "agree.hpp"

namespace {
int failures = 0;
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tune_agree: FAILED: %s\n", what);
    ++failures;
  }
}
struct config {
  int a = 0, b = 0;
  friend bool operator==(const config&, const config&) = default;
};
} // namespace

int main() {
  using tune::majority, tune::median_threshold;
  const config d{}, x{1, 0}, y{0, 2};
  check(majority(std::vector{x, x, d}) == std::pair{x, std::size_t(2)}, "two of three runs took x: x");
  check(majority(std::vector{x, y, d}) == std::pair{d, std::size_t(0)}, "three runs, three verdicts: the defaults");
  check(majority(std::vector{x, y, x, y}) == std::pair{d, std::size_t(0)}, "two of four is not more than half: the defaults");
  check(majority(std::vector{d, d, x}) == std::pair{d, std::size_t(0)}, "one of three took x: the defaults");
  check(majority(std::vector{y, y, y}) == std::pair{y, std::size_t(3)}, "all took y: y");
  check(majority(std::vector{x}) == std::pair{x, std::size_t(1)}, "one run: its entry");
  check(majority(std::vector{x, x, d}, x) == std::pair{x, std::size_t(0)}, "taking the defaults is not a vote");
  constexpr std::int64_t never = 0;
  check(median_threshold({16, 8, 64}, -1) == 16, "the median of 16, 8 and 64 is 16");
  check(median_threshold({never, 4096, never}, never) == never, "never counts as the largest: never");
  check(median_threshold({never, 4096, 1024}, never) == 4096, "never is above 4096: 4096");
  check(median_threshold({8, 64}, -1) == 64, "an even count takes the upper median");
  if (failures == 0) std::printf("tune_agree: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
