// canvas.hpp's text and PNG output. stb's implementations are compiled in this file only.
#include "canvas.hpp"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wconversion"
#endif
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace examples {

void canvas::text(int x, int y, const std::string& s, const unsigned char* c, int scale) {
  std::vector<char> buf(s.size() * 300 + 300); // stb_easy_font: about 270 bytes per character
  std::string copy = s;
  const int quads = stb_easy_font_print(0, 0, copy.data(), nullptr, buf.data(), int(buf.size()));
  const float* v = reinterpret_cast<const float*>(buf.data()); // 4 vertices per quad: x, y, z, color
  for (int q = 0; q < quads; ++q) {
    const float* a = v + q * 16; // vertex 0 (x, y) and vertex 2 (x, y) are opposite corners
    const int x0 = int(a[0]), y0 = int(a[1]), x1 = int(a[8]), y1 = int(a[9]);
    rect(x + x0 * scale, y + y0 * scale, x + x1 * scale - 1, y + y1 * scale - 1, c);
  }
}

bool canvas::write_png(const std::string& path) const {
  return stbi_write_png(path.c_str(), w_, h_, 3, px_.data(), w_ * 3) != 0;
}
} // namespace examples
