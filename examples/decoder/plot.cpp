// The chart of plot.hpp, drawn on examples/common/canvas.hpp.
#include "plot.hpp"

#include "../common/canvas.hpp"

namespace gpt {

bool plot_loss(const std::string& path, const std::vector<double>& train, const std::vector<std::pair<long, double>>& validation,
               long every) {
  const int W = 720, H = 440, left = 70, right = 30, top = 40, bottom = 50;
  examples::canvas img(W, H);
  const unsigned char black[3] = {30, 30, 30}, grid[3] = {225, 225, 225}, blue[3] = {31, 119, 180}, orange[3] = {230, 110, 20};
  const int pw = W - left - right, ph = H - top - bottom;
  // the training loss averaged over runs of `every` iterations, at each run's last iteration
  std::vector<std::pair<long, double>> runs;
  for (std::size_t i = 0; i < train.size(); i += std::size_t(every)) {
    const std::size_t end = std::min(train.size(), i + std::size_t(every));
    double s = 0;
    for (std::size_t j = i; j < end; ++j) s += train[j];
    runs.emplace_back(long(end), s / double(end - i));
  }
  const long n = std::max<long>(1, long(train.size()));
  double ymax = 0;
  for (const auto& [_, v] : runs) ymax = std::max(ymax, v);
  for (const auto& [_, v] : validation) ymax = std::max(ymax, v);
  ymax = std::ceil(std::max(ymax, 1e-3) * 2) / 2; // a multiple of 0.5 above the highest
  auto xpos = [&](long it) { return left + int(double(it) * pw / double(n)); };
  auto ypos = [&](double v) { return top + ph - int(v / ymax * ph); };
  for (int k = 0; k <= 5; ++k) {
    const int y = top + ph - k * ph / 5;
    img.line(left, y, left + pw, y, grid);
    img.text(8, y - 4, examples::fixed(ymax * k / 5, 2), black);
  }
  for (int k = 0; k <= 4; ++k) {
    const long it = n * k / 4;
    img.line(xpos(it), top + ph, xpos(it), top + ph + 4, black);
    img.text(xpos(it) - 10, top + ph + 10, std::to_string(it), black);
  }
  img.line(left, top, left, top + ph, black), img.line(left, top + ph, left + pw, top + ph, black);
  img.text(left + pw / 2 - 40, H - 22, "iteration", black, 2);
  img.text(left, 12, "train loss", blue, 2);
  img.text(left + pw - 200, 12, "validation loss", orange, 2);
  for (std::size_t i = 1; i < runs.size(); ++i)
    img.line(xpos(runs[i - 1].first), ypos(runs[i - 1].second), xpos(runs[i].first), ypos(runs[i].second), blue, 2);
  for (const auto& [it, v] : validation) img.rect(xpos(it) - 4, ypos(v) - 4, xpos(it) + 4, ypos(v) + 4, orange);
  return img.write_png(path);
}
} // namespace gpt
