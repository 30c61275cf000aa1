// The chart of plot.hpp.
#include "plot.hpp"

namespace fashion {
using examples::fixed;

bool plot_curves(const std::string& path, const std::vector<double>& loss, const std::vector<double>& accuracy) {
  const int W = 720, H = 440, left = 70, right = 70, top = 40, bottom = 50;
  canvas img(W, H);
  const unsigned char black[3] = {30, 30, 30}, grid[3] = {225, 225, 225}, blue[3] = {31, 119, 180}, orange[3] = {230, 110, 20};
  const int pw = W - left - right, ph = H - top - bottom;
  const std::size_t n = std::max(loss.size(), accuracy.size());
  const double lmax = loss.empty() ? 1.0 : *std::max_element(loss.begin(), loss.end()) * 1.05;
  double amin = 1.0;
  for (double a : accuracy) amin = std::min(amin, a);
  amin = std::floor(std::max(0.0, amin - 0.02) * 20) / 20; // a multiple of 0.05 below the lowest
  const double amax = 1.0;
  auto xpos = [&](std::size_t i) { return left + (n <= 1 ? pw / 2 : int(double(i) * pw / double(n - 1))); };
  auto lpos = [&](double v) { return top + ph - int(v / lmax * ph); };
  auto apos = [&](double v) { return top + ph - int((v - amin) / (amax - amin) * ph); };

  for (int k = 0; k <= 5; ++k) { // horizontal grid with both axes' values
    const int y = top + ph - k * ph / 5;
    img.line(left, y, left + pw, y, grid);
    img.text(8, y - 4, fixed(lmax * k / 5, 3), blue);
    img.text(left + pw + 8, y - 4, fixed(amin + (amax - amin) * k / 5, 3), orange);
  }
  img.line(left, top, left, top + ph, black), img.line(left, top + ph, left + pw, top + ph, black);
  img.line(left + pw, top, left + pw, top + ph, black);
  for (std::size_t i = 0; i < n; ++i) {
    img.line(xpos(i), top + ph, xpos(i), top + ph + 4, black);
    img.text(xpos(i) - 3, top + ph + 10, std::to_string(i + 1), black);
  }
  img.text(left + pw / 2 - 20, H - 22, "epoch", black, 2);
  img.text(left, 12, "train loss", blue, 2);
  img.text(left + pw - 150, 12, "test accuracy", orange, 2);
  auto curve = [&](const std::vector<double>& v, auto pos, const unsigned char* c) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) img.line(xpos(i - 1), pos(v[i - 1]), xpos(i), pos(v[i]), c, 2);
      img.rect(xpos(i) - 3, pos(v[i]) - 3, xpos(i) + 3, pos(v[i]) + 3, c);
    }
  };
  curve(loss, lpos, blue);
  curve(accuracy, apos, orange);
  return img.write_png(path);
}
} // namespace fashion
