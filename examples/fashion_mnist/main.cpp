// fashion_mnist: trains the CNN of cnn.hpp on Fashion-MNIST with Adam and reports the test accuracy
// after every epoch. Data: the IDX files of Debian's dataset-fashion-mnist package.
//
//   fashion_mnist [--epochs N] [--steps N] [--lr X] [--seed N] [--data DIR] [--out DIR]
//   fashion_mnist --eval FILE [--data DIR]
//
// Training writes DIR/metrics.csv and DIR/curves.png after every epoch and DIR/weights.safetensors at
// the end (default DIR: fashion_mnist_out). --steps N stops each epoch after N batches (a quick run);
// --eval FILE loads weights and prints the test accuracy they give. The last line of a training run
// is "final test accuracy 0.XXXX after N epochs in S s".
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <tenfold/io/idx.hpp>
#include <tenfold/io/parameters.hpp>

#include "cnn.hpp"
#include "plot.hpp"

namespace {
using namespace tenfold;
using namespace fashion;
using clock_type = std::chrono::steady_clock;

constexpr index_t batch = 64, eval_batch = 100, train_count = 60000, test_count = 10000;
// Fashion-MNIST's pixel mean and standard deviation (of x / 255 over the training set).
constexpr float pixel_mean = 0.2860f, pixel_std = 0.3530f;

struct options {
  int epochs = 8;
  long steps = 0; // 0: every batch
  float lr = 2e-3f;
  std::uint64_t seed = 1;
  std::string data = "/usr/share/datasets/fashion-mnist", out = "fashion_mnist_out", eval;
};

[[noreturn]] void usage(const char* what) {
  std::fprintf(stderr, "fashion_mnist: %s\nusage: fashion_mnist [--epochs N] [--steps N] [--lr X] [--seed N] [--data DIR] [--out DIR]\n"
                       "       fashion_mnist --eval FILE [--data DIR]\n", what);
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    auto number = [&](const std::string& s) {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || *end != '\0' || !(v >= 0)) usage(("not a non-negative number: " + a + " " + s).c_str());
      return v;
    };
    if (a == "--epochs") o.epochs = int(number(value()));
    else if (a == "--steps") o.steps = long(number(value()));
    else if (a == "--lr") o.lr = float(number(value()));
    else if (a == "--seed") o.seed = std::uint64_t(number(value()));
    else if (a == "--data") o.data = value();
    else if (a == "--out") o.out = value();
    else if (a == "--eval") o.eval = value();
    else usage(("unknown argument " + a).c_str());
  }
  if (o.epochs < 1) usage("--epochs must be at least 1");
  return o;
}

// The images as normalised floats [N, 28, 28, 1] and the labels as int64 [N].
template <index_t N>
struct dataset {
  Tensor<float, shape<N, 28, 28, 1>> images;
  Tensor<std::int64_t, shape<N>> labels;
  dataset(const std::string& images_file, const std::string& labels_file) {
    Tensor<float, shape<N, 28, 28>> raw;
    io::read_idx(images_file, raw);
    images = (reshape<N, 28, 28, 1>(raw) * (1.0f / 255) - pixel_mean) * (1.0f / pixel_std);
    io::read_idx(labels_file, labels);
    for (auto l : labels)
      if (l < 0 || l >= classes) throw error(detail::message("fashion_mnist: ", labels_file, ": label ", l, " is not a class in 0..9"));
  }
};

template <index_t N, index_t B>
void gather(const dataset<N>& d, const std::uint32_t* index, Tensor<float, shape<B, 28, 28, 1>>& x, Tensor<std::int64_t, shape<B>>& y) {
  for (index_t i = 0; i < B; ++i) {
    std::copy_n(d.images.data() + index[i] * 784, 784, x.data() + i * 784);
    y.data()[i] = d.labels.data()[index[i]];
  }
}

// A permutation of 0..n-1 from Philox (Fisher-Yates; draw i is counter i of the epoch's stream), the
// same on every machine.
std::vector<std::uint32_t> shuffled(std::uint32_t n, rng& g) {
  std::vector<std::uint32_t> p(n);
  std::iota(p.begin(), p.end(), 0u);
  const philox_stream s = g.reserve(n);
  for (std::uint32_t i = n - 1; i > 0; --i) {
    const auto r = detail::philox_at(s.seed, s.offset, index_t(i));
    const std::uint64_t v = (std::uint64_t(r.v[1]) << 32) | r.v[0];
    std::swap(p[i], p[std::uint32_t(v % (std::uint64_t(i) + 1))]);
  }
  return p;
}

double test_accuracy(const parameters& p, const dataset<test_count>& test) {
  static Tensor<float, shape<eval_batch, 28, 28, 1>> x;
  static Tensor<std::int64_t, shape<eval_batch>> y;
  static Tensor<std::int64_t, shape<eval_batch>> predicted;
  std::vector<std::uint32_t> order(test_count);
  std::iota(order.begin(), order.end(), 0u);
  index_t correct = 0;
  for (index_t b = 0; b < test_count / eval_batch; ++b) {
    gather(test, order.data() + b * eval_batch, x, y);
    predicted = argmax(logits<eval_batch>(p, x), axis<1>);
    for (index_t i = 0; i < eval_batch; ++i) correct += predicted.data()[i] == y.data()[i];
  }
  return double(correct) / double(test_count);
}

void save(parameters& p, const std::string& path, int epochs, double accuracy) {
  io::save_parameters(path, p,
                      {{"model", "tenfold examples/fashion_mnist cnn.hpp"},
                       {"epochs", std::to_string(epochs)},
                       {"test_accuracy", std::to_string(accuracy)}});
}

std::string duration(double s) {
  char b[32];
  if (s >= 60) std::snprintf(b, sizeof b, "%dm%02ds", int(s) / 60, int(s) % 60);
  else std::snprintf(b, sizeof b, "%.0fs", s);
  return b;
}

int run(const options& o) {
  const auto t0 = clock_type::now();
  const dataset<test_count> test(o.data + "/t10k-images-idx3-ubyte.gz", o.data + "/t10k-labels-idx1-ubyte.gz");
  if (!o.eval.empty()) {
    parameters p(o.seed);
    io::load_parameters(o.eval, p);
    std::printf("test accuracy %.4f (weights %s)\n", test_accuracy(p, test), o.eval.c_str());
    return 0;
  }
  const auto train = std::make_unique<dataset<train_count>>(o.data + "/train-images-idx3-ubyte.gz", o.data + "/train-labels-idx1-ubyte.gz");
  std::filesystem::create_directories(o.out);
  const std::string csv_path = o.out + "/metrics.csv", png_path = o.out + "/curves.png", weights_path = o.out + "/weights.safetensors";
  std::ofstream csv(csv_path);
  if (!csv) throw error(detail::message("fashion_mnist: cannot write ", csv_path));
  csv << "epoch,train_loss,test_accuracy,seconds,images_per_second\n";

  auto p = std::make_unique<parameters>(o.seed);
  auto s = std::make_unique<optimizer_state>();
  auto t = std::make_unique<trainer<batch>>();
  optim::adam opt({.lr = o.lr});
  rng shuffle_rng(o.seed * 2 + 1), dropout_rng(o.seed * 2 + 2);
  Tensor<float, shape<batch, 28, 28, 1>> x;
  Tensor<std::int64_t, shape<batch>> y;

  const long per_epoch = train_count / batch, steps = o.steps > 0 ? std::min(o.steps, per_epoch) : per_epoch;
  const long total = steps * o.epochs;
  const bool tty = isatty(fileno(stdout));
  std::printf("fashion_mnist: %ld steps of %ld images per epoch, %d epochs, Adam lr %g (cosine), %s\n", steps, long(batch), o.epochs,
              double(o.lr), tty ? "progress below" : "one line per epoch");
  std::vector<double> losses, accuracies;
  double accuracy = 0;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    const auto order = shuffled(train_count, shuffle_rng);
    const auto e0 = clock_type::now();
    double loss_sum = 0;
    for (long k = 0; k < steps; ++k) {
      gather(*train, order.data() + k * batch, x, y);
      const long global = (epoch - 1) * steps + k;
      loss_sum += t->step(*p, *s, opt, optim::cosine_lr(global, total, o.lr, steps / 4), x, y, dropout_rng);
      if (tty && (k % 8 == 7 || k + 1 == steps)) {
        const double el = std::chrono::duration<double>(clock_type::now() - e0).count(), ips = double((k + 1) * batch) / el;
        const int width = 30, done = int(double(k + 1) / double(steps) * width);
        std::printf("\repoch %d/%d [%s%s] %5.1f%% %6.0f img/s loss %.4f ETA %s   ", epoch, o.epochs, std::string(std::size_t(done), '#').c_str(),
                    std::string(std::size_t(width - done), '.').c_str(), 100.0 * double(k + 1) / double(steps), ips, loss_sum / double(k + 1),
                    duration(double(steps - k - 1) * batch / ips).c_str());
        std::fflush(stdout);
      }
    }
    const double secs = std::chrono::duration<double>(clock_type::now() - e0).count();
    accuracy = test_accuracy(*p, test);
    losses.push_back(loss_sum / double(steps)), accuracies.push_back(accuracy);
    if (tty) std::printf("\r%*s\r", 110, "");
    std::printf("epoch %d/%d: train loss %.4f, test accuracy %.4f, %.1f s (%.0f images/s)\n", epoch, o.epochs, losses.back(), accuracy, secs,
                double(steps * batch) / secs);
    std::fflush(stdout);
    csv << epoch << ',' << losses.back() << ',' << accuracy << ',' << secs << ',' << double(steps * batch) / secs << '\n' << std::flush;
    if (!plot_curves(png_path, losses, accuracies)) throw error(detail::message("fashion_mnist: cannot write ", png_path));
  }
  save(*p, weights_path, o.epochs, accuracy);
  std::printf("wrote %s, %s and %s\n", csv_path.c_str(), png_path.c_str(), weights_path.c_str());
  std::printf("final test accuracy %.4f after %d epochs in %.0f s\n", accuracy, o.epochs,
              std::chrono::duration<double>(clock_type::now() - t0).count());
  return 0;
}
} // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
