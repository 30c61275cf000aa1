#pragma once
// A small RGB canvas for the examples' charts: lines, rectangles, and text from stb_easy_font's quads;
// written as PNG by stb_image_write (Debian's libstb-dev). stb's implementations are compiled in
// canvas.cpp only.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace examples {

class canvas {
 public:
  canvas(int w, int h) : w_(w), h_(h), px_(std::size_t(w) * std::size_t(h) * 3, 255) {}
  int width() const { return w_; }
  int height() const { return h_; }
  const unsigned char* data() const { return px_.data(); }

  void dot(int x, int y, const unsigned char* c) {
    if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
    std::copy(c, c + 3, px_.begin() + (std::ptrdiff_t(y) * w_ + x) * 3);
  }
  void rect(int x0, int y0, int x1, int y1, const unsigned char* c) {
    for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y)
      for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) dot(x, y, c);
  }
  // A line `thick` pixels wide (Bresenham, each point a small square).
  void line(int x0, int y0, int x1, int y1, const unsigned char* c, int thick = 1) {
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
      rect(x0 - thick / 2, y0 - thick / 2, x0 + (thick - 1) / 2, y0 + (thick - 1) / 2, c);
      if (x0 == x1 && y0 == y1) break;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  void text(int x, int y, const std::string& s, const unsigned char* c, int scale = 1);
  // false where the file could not be written
  bool write_png(const std::string& path) const;

 private:
  int w_, h_;
  std::vector<unsigned char> px_;
};

// v with `digits` decimals
inline std::string fixed(double v, int digits) {
  char s[32];
  std::snprintf(s, sizeof s, "%.*f", digits, v);
  return s;
}
} // namespace examples
