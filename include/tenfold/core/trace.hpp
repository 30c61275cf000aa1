#pragma once
// Tracing: with TENFOLD_TRACE defined, every evaluated loop nest (an assignment, a materialised
// buffer, a GEMM) is recorded — the expression as its ops name it, the shape, the thread and the time —
// and tenfold::trace::write(path) emits Chrome trace-event JSON (chrome://tracing, Perfetto). When
// trace::summary() groups them by expression and shape, the costliest first. When
// TENFOLD_TRACE is not defined, `trace::scope` is an empty type and costs nothing. Define it for the
// whole program (every translation unit), as any macro that changes inline code must be.
#include <string>

#if defined(TENFOLD_TRACE)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <vector>
#endif

#include "tenfold/core/error.hpp"

namespace tenfold::trace {

#if defined(TENFOLD_TRACE)
struct event {
  std::string name, shape;
  double start_us, duration_us;
  std::size_t thread;
};

struct recorder {
  std::mutex m;
  std::vector<event> events;
  const std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  static recorder& instance() {
    static recorder r;
    return r;
  }
  double now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin).count();
  }
};

class scope {
 public:
  scope(std::string name, std::string shape) : name_(std::move(name)), shape_(std::move(shape)), start_(recorder::instance().now_us()) {}
  ~scope() {
    auto& r = recorder::instance();
    const double end = r.now_us();
    std::lock_guard<std::mutex> lk(r.m);
    r.events.push_back({std::move(name_), std::move(shape_), start_, end - start_,
                        std::hash<std::thread::id>{}(std::this_thread::get_id())});
  }
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;

 private:
  std::string name_, shape_;
  double start_;
};

inline std::vector<event> events() {
  auto& r = recorder::instance();
  std::lock_guard<std::mutex> lk(r.m);
  return r.events;
}
inline void clear() {
  auto& r = recorder::instance();
  std::lock_guard<std::mutex> lk(r.m);
  r.events.clear();
}

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

// Writes the events recorded so far as a Chrome trace-event JSON array.
inline void write(const std::string& path) {
  const auto ev = events();
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw error("tenfold::trace::write: cannot open '" + path + "' for writing");
  std::fprintf(f, "[\n");
  for (std::size_t i = 0; i < ev.size(); ++i)
    std::fprintf(f, "  {\"name\": \"%s\", \"cat\": \"tenfold\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, \"tid\": %zu, \"args\": {\"shape\": \"%s\"}}%s\n",
                 json_escape(ev[i].name).c_str(), ev[i].start_us, ev[i].duration_us, ev[i].thread % 100000,
                 json_escape(ev[i].shape).c_str(), i + 1 < ev.size() ? "," : "");
  std::fprintf(f, "]\n");
  if (std::fclose(f) != 0) throw error("tenfold::trace::write: error writing '" + path + "'");
}
// The recorded nests grouped by expression and shape, the costliest first: total time, share, count,
// shape and expression (cut to `width` characters), one line each, `lines` lines at most. Where a
// program's time goes, nest by nest (what a profiler shows as anonymous template instances).
inline std::string summary(std::size_t lines = 40, std::size_t width = 160) {
  struct total {
    double us = 0;
    long count = 0;
  };
  std::map<std::pair<std::string, std::string>, total> by;
  double all = 0;
  for (const auto& e : events()) {
    auto& t = by[{e.name, e.shape}];
    t.us += e.duration_us, ++t.count, all += e.duration_us;
  }
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [key, t] : by) {
    char head[96];
    std::snprintf(head, sizeof head, "%10.0f us %5.1f%% %6ld x  %s  ", t.us, all > 0 ? 100 * t.us / all : 0.0, t.count, key.second.c_str());
    rows.emplace_back(t.us, head + key.first.substr(0, width));
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  char head[64];
  std::snprintf(head, sizeof head, "%10.0f us in %zu nests\n", all, rows.size());
  std::string out = head;
  for (std::size_t i = 0; i < rows.size() && i < lines; ++i) out += rows[i].second + "\n";
  return out;
}
inline constexpr bool enabled = true;
#else
struct scope {
  template <class... A>
  explicit scope(A&&...) {}
};
inline constexpr bool enabled = false;
#endif
} // namespace tenfold::trace
