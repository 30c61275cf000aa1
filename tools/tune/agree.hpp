#pragma once
// What several runs of one search agree on (tenfold_tune --runs): the configuration more than half of
// them took, and a threshold's median. Standard library only, so that its test builds in a moment.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace tune {

// The configuration that more than half of `taken` hold and is not `defaults`, with how many hold it;
// else {defaults, 0}. taken[i]: run i's entry (the defaults where that run kept them).
template <class Config>
std::pair<Config, std::size_t> majority(const std::vector<Config>& taken, const Config& defaults = Config{}) {
  for (const Config& c : taken) {
    if (c == defaults) continue;
    const auto n = std::size_t(std::count(taken.begin(), taken.end(), c));
    if (2 * n > taken.size()) return {c, n};
  }
  return {defaults, 0};
}

// The median of the runs' thresholds (the upper one of an even count), `never` counted as the largest.
inline std::int64_t median_threshold(std::vector<std::int64_t> v, std::int64_t never) {
  auto key = [&](std::int64_t x) { return x == never ? std::numeric_limits<std::int64_t>::max() : x; };
  std::sort(v.begin(), v.end(), [&](std::int64_t a, std::int64_t b) { return key(a) < key(b); });
  return v[v.size() / 2];
}
} // namespace tune
