// fashion_mnist: trains the CNN of cnn.hpp on Fashion-MNIST with Adam and reports the test accuracy
// after every epoch. Data: the IDX files of Debian's dataset-fashion-mnist package.
//
//   fashion_mnist [--epochs N] [--steps N] [--lr X] [--seed N] [--data DIR] [--out DIR] [--log-steps FILE]
//                 [--save-initial FILE] [--device cpu|cuda] [--zero1]
//   fashion_mnist --eval FILE [--data DIR]
//   mpirun -np R fashion_mnist ...        (data-parallel, where built with MPI)
//
// Training writes DIR/metrics.csv and DIR/curves.png after every epoch and DIR/weights.safetensors at
// the end (default DIR: fashion_mnist_out). --steps N stops each epoch after N batches (a quick run);
// --log-steps FILE writes every step's loss (epoch,step,loss); --save-initial FILE writes the initial
// parameters (safetensors, before the first step: the PyTorch comparison starts from them, see
// bench/fashion_mnist_torch.py --init); --eval FILE loads weights and prints the test accuracy they give. The last line
// of a training run is "final test accuracy 0.XXXX after N epochs in S s". Built with -DTENFOLD_TRACE=1
// (CMAKE_CXX_FLAGS), it also prints to stderr where the time went, nest by nest (tenfold::trace::summary).
//
// Under mpirun (R ranks, on one host or many) every rank holds the model and takes its shard of every
// global batch of 64 (64 / R rows, the first 64 % R ranks one more), and the run is the one-process run
// up to float summation order (cnn.hpp). Rank 0 prints and writes the files; the test accuracy is
// counted by all ranks, each on its share of the test set. Each rank uses cores / (ranks on its host)
// threads unless TENFOLD_NUM_THREADS says otherwise. --zero1 shards Adam's moments over the ranks (ZeRO
// stage 1: each bucket of gradients reduce-scattered, each rank updating its share of every parameter,
// the parameters all-gathered; dist/sharded_adam.hpp): the same parameters after every step as without
// it, with 1 / R of the optimizer's state on each rank.
//
// Denormal floats are flushed to zero (tenfold::cpu::flush_denormals, on every thread; the PyTorch
// comparison sets the same): Adam's moments of weights that get no gradient decay into them within the
// first epoch, and each operation on one costs ~100x (the later epochs took 15% longer).
//
// --device cuda trains on the GPU (device_step.hpp; where built with CUDA, one process): the same
// network, batches and dropout masks, so the same run up to float rounding.
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <tenfold/io/idx.hpp>
#include <tenfold/io/parameters.hpp>

#include "plot.hpp"
#include "steps.hpp" // cnn.hpp, and the communicator: MPI's where built with it
#ifdef FASHION_MNIST_CUDA
#include "device_step.hpp"
#endif

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
  std::string data = "/usr/share/datasets/fashion-mnist", out = "fashion_mnist_out", eval, log_steps, save_initial;
  bool cuda = false;  // --device cuda
  bool zero1 = false; // --zero1
};

[[noreturn]] void usage(const char* what) {
  std::fprintf(stderr,
               "fashion_mnist: %s\nusage: fashion_mnist [--epochs N] [--steps N] [--lr X] [--seed N] [--data DIR] "
               "[--out DIR] [--log-steps FILE]\n"
               "                     [--save-initial FILE] [--device cpu|cuda] [--zero1]\n"
               "       fashion_mnist --eval FILE [--data DIR]\n",
               what);
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
    else if (a == "--log-steps") o.log_steps = value();
    else if (a == "--save-initial") o.save_initial = value();
    else if (a == "--device") {
      const std::string d = value();
      if (d != "cpu" && d != "cuda") usage("--device takes cpu or cuda");
      o.cuda = d == "cuda";
    } else if (a == "--zero1") o.zero1 = true;
    else usage(("unknown argument " + a).c_str());
  }
  if (o.epochs < 1) usage("--epochs must be at least 1");
  if (o.zero1 && o.cuda) usage("--zero1 shards the CPU's optimizer (not with --device cuda)");
#ifndef FASHION_MNIST_CUDA
  if (o.cuda) usage("--device cuda: this build has no CUDA (configure with -DTENFOLD_CUDA=ON where nvcc is installed)");
#endif
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

// The images index[0 .. rows) into the first rows of x and y; the rest (an uneven shard's padding) zero.
template <index_t N, index_t B>
void gather(const dataset<N>& d, const std::uint32_t* index, Tensor<float, shape<B, 28, 28, 1>>& x, Tensor<std::int64_t, shape<B>>& y,
            index_t rows = B) {
  for (index_t i = 0; i < B; ++i) {
    if (i < rows) std::copy_n(d.images.data() + index[i] * 784, 784, x.data() + i * 784);
    else std::fill_n(x.data() + i * 784, 784, 0.0f);
    y.data()[i] = i < rows ? d.labels.data()[index[i]] : 0;
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

// Every rank counts the test batches b with b % ranks == rank; the counts are summed.
template <class Comm>
double test_accuracy(const parameters& p, const dataset<test_count>& test, Comm& comm) {
  static Tensor<float, shape<eval_batch, 28, 28, 1>> x;
  static Tensor<std::int64_t, shape<eval_batch>> y;
  static Tensor<std::int64_t, shape<eval_batch>> predicted;
  std::vector<std::uint32_t> order(test_count);
  std::iota(order.begin(), order.end(), 0u);
  std::int64_t correct[1] = {0};
  for (index_t b = comm.rank(); b < test_count / eval_batch; b += comm.size()) {
    gather(test, order.data() + b * eval_batch, x, y);
    predicted = argmax(logits<eval_batch>(p, x), axis<1>);
    for (index_t i = 0; i < eval_batch; ++i) correct[0] += predicted.data()[i] == y.data()[i];
  }
  comm.allreduce(std::span(correct));
  return double(correct[0]) / double(test_count);
}

// The replicas stay bitwise identical: the same summed gradients, the same update. After every epoch a
// checksum of the parameters is compared over the ranks, and rank 0's are sent again if they drifted
// (an MPI whose allreduce does not give every rank the same bits).
template <class Comm>
void check_replicas(parameters& p, Comm& comm, int epoch) {
  if (comm.size() == 1) return;
  std::uint64_t h = 1469598103934665603ull; // FNV-1a over the bytes
  p.each([&h](const char*, const auto& t) {
    const auto* b = reinterpret_cast<const unsigned char*>(t.data());
    for (std::size_t i = 0; i < sizeof(float) * std::size_t(t.size()); ++i) h = (h ^ b[i]) * 1099511628211ull;
  });
  const auto c = std::int64_t(h >> 2); // max of (c, -c) gives the largest and the smallest checksum
  std::int64_t v[2] = {c, -c};
  comm.allreduce(std::span(v), dist::reduce_op::max);
  if (v[0] == -v[1]) return;
  if (comm.is_root()) std::printf("note: the ranks' parameters differ after epoch %d; sending rank 0's to every rank\n", epoch);
  p.each([&comm](const char*, auto& t) { comm.broadcast(t); });
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

template <index_t B, class Comm>
int train_model(const options& o, Comm& comm, const dataset<train_count>& train, const dataset<test_count>& test, clock_type::time_point t0) {
  const bool root = comm.is_root();
  const std::string csv_path = o.out + "/metrics.csv", png_path = o.out + "/curves.png", weights_path = o.out + "/weights.safetensors";
  std::ofstream csv, step_log;
  if (root) {
    std::filesystem::create_directories(o.out);
    csv.open(csv_path);
    if (!csv) throw error(detail::message("fashion_mnist: cannot write ", csv_path));
    csv << "epoch,train_loss,test_accuracy,seconds,images_per_second\n";
    if (!o.log_steps.empty()) {
      step_log.open(o.log_steps);
      if (!step_log) throw error(detail::message("fashion_mnist: cannot write ", o.log_steps));
      step_log << "epoch,step,loss\n";
      step_log.precision(9);
    }
  }

  auto p = std::make_unique<parameters>(o.seed);
  p->each([&comm](const char*, auto& t) { comm.broadcast(t); }); // every replica starts from rank 0's
  if (root && !o.save_initial.empty())
    io::save_parameters(
        o.save_initial, *p,
        {{"model", "tenfold examples/fashion_mnist cnn.hpp"}, {"epochs", "0"}, {"seed", std::to_string(o.seed)}});
  auto t = std::make_unique<trainer<B>>();
#ifdef FASHION_MNIST_CUDA
  device_trainer_ptr gpu;
  if (o.cuda) {
    if (comm.size() > 1) throw error("fashion_mnist: --device cuda trains in one process (not under mpirun)");
    if constexpr (B == device_batch) gpu = make_device_trainer(*p);
  }
#endif
  using step_plan_type = typename trainer<B>::template plan_for<Comm>; // every rank sums the same buckets
  comm.check_same(step_plan_type::kept_bytes, "the gradients' bytes");
  comm.check_same(step_plan_type::template buckets<bucket_bytes>.count, "the gradient buckets");
  // Adam: whole, with its moments beside the parameters, or sharded over the ranks (--zero1)
  optim::adam opt({.lr = o.lr});
  std::unique_ptr<optimizer_state> s;
  std::unique_ptr<typename trainer<B>::template sharded_optimizer<Comm>> sharded;
  if (o.zero1) sharded = std::make_unique<typename trainer<B>::template sharded_optimizer<Comm>>(comm, opt.options);
  else s = std::make_unique<optimizer_state>();
  rng shuffle_rng(o.seed * 2 + 1), dropout_rng(o.seed * 2 + 2);
  Tensor<float, shape<B, 28, 28, 1>> x;
  Tensor<std::int64_t, shape<B>> y;
  const shard part = shard::of(comm.rank(), comm.size(), batch);

  const long per_epoch = train_count / batch, steps = o.steps > 0 ? std::min(o.steps, per_epoch) : per_epoch;
  const long total = steps * o.epochs;
  // (Under an MPI launcher, stdout is the launcher's pipe or pseudo-terminal whatever the user's is: one
  // line per epoch there.)
  const bool launched = comm.size() > 1 || std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE");
  const bool tty = root && !launched && isatty(fileno(stdout));
  std::string ranks;
  if (comm.size() > 1) ranks = detail::message(" (", comm.size(), " ranks, ", part.count, " images each", batch % comm.size() ? " or fewer" : "", ")");
  if (root)
    std::printf("fashion_mnist: %ld steps of %ld images per epoch%s, %d epochs, Adam lr %g (cosine)%s, %s\n", steps,
                long(batch), ranks.c_str(), o.epochs, double(o.lr),
                sharded ? detail::message(", moments sharded (ZeRO-1: ", sharded->share_size(), " of ",
                                          step_plan_type::kept_bytes / 4, " a rank)")
                              .c_str()
                        : "",
                tty ? "progress below" : "one line per epoch");
  std::vector<double> losses, accuracies;
  double accuracy = 0;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    const auto order = shuffled(train_count, shuffle_rng);
    const auto e0 = clock_type::now();
    const double waited0 = comm.seconds_waiting();
    double loss_sum = 0;
    for (long k = 0; k < steps; ++k) {
      gather(train, order.data() + k * batch + part.first, x, y, part.count);
      const long global = (epoch - 1) * steps + k;
      const float lr = optim::cosine_lr(global, total, o.lr, steps / 4);
      float loss = 0;
#ifdef FASHION_MNIST_CUDA
      if constexpr (B == device_batch) {
        if (gpu) loss = device_step(*gpu, opt, lr, x, y, dropout_rng);
      }
      if (!gpu)
#endif
        loss = sharded ? t->step(*p, *sharded, lr, x, y, part, dropout_rng, comm)
                       : t->step(*p, *s, opt, lr, x, y, part, dropout_rng, comm);
      loss_sum += loss;
      if (step_log.is_open()) step_log << epoch << ',' << k << ',' << loss << '\n';
      if (tty && (k % 8 == 7 || k + 1 == steps)) {
        const double el = std::chrono::duration<double>(clock_type::now() - e0).count(), ips = double((k + 1) * batch) / el;
        const int width = 30, done = int(double(k + 1) / double(steps) * width);
        std::printf("\repoch %d/%d [%s%s] %5.1f%% %6.0f img/s loss %.4f ETA %s   ", epoch, o.epochs, std::string(std::size_t(done), '#').c_str(),
                    std::string(std::size_t(width - done), '.').c_str(), 100.0 * double(k + 1) / double(steps), ips, loss_sum / double(k + 1),
                    duration(double(steps - k - 1) * batch / ips).c_str());
        std::fflush(stdout);
      }
    }
    const double secs = std::chrono::duration<double>(clock_type::now() - e0).count(),
                 waited = comm.seconds_waiting() - waited0;
#ifdef FASHION_MNIST_CUDA
    if (gpu) download(*gpu, *p); // the test accuracy and the weights file read the host's parameters
#endif
    check_replicas(*p, comm, epoch);
    accuracy = test_accuracy(*p, test, comm);
    losses.push_back(loss_sum / double(steps)), accuracies.push_back(accuracy);
    if (!root) continue;
    if (tty) std::printf("\r%*s\r", 110, "");
    std::printf("epoch %d/%d: train loss %.4f, test accuracy %.4f, %.1f s (%.0f images/s)", epoch, o.epochs,
                losses.back(), accuracy, secs, double(steps * batch) / secs);
    if (comm.size() > 1) std::printf(", rank 0 waited %.1f s in collectives", waited);
    std::printf("\n");
    std::fflush(stdout);
    csv << epoch << ',' << losses.back() << ',' << accuracy << ',' << secs << ',' << double(steps * batch) / secs << '\n' << std::flush;
    if (!plot_curves(png_path, losses, accuracies)) throw error(detail::message("fashion_mnist: cannot write ", png_path));
  }
  if (!root) return 0;
  save(*p, weights_path, o.epochs, accuracy);
  std::printf("wrote %s, %s and %s\n", csv_path.c_str(), png_path.c_str(), weights_path.c_str());
  if (t->arena.size() > 0) // (the CPU's step ran)
    std::printf("training step: arena %.1f MB, planned at compile time (stage outputs, their gradients, temporaries)\n",
                double(t->arena.size()) / 1e6);
#if defined(TENFOLD_TRACE) // (a build with -DTENFOLD_TRACE=1 in every unit: where the time went, nest by nest)
  std::fprintf(stderr, "%s", tenfold::trace::summary().c_str());
#endif
  std::printf("final test accuracy %.4f after %d epochs in %.0f s\n", accuracy, o.epochs,
              std::chrono::duration<double>(clock_type::now() - t0).count());
  return 0;
}

template <class Comm>
int run(const options& o, Comm& comm) {
  const auto t0 = clock_type::now();
  const dataset<test_count> test(o.data + "/t10k-images-idx3-ubyte.gz", o.data + "/t10k-labels-idx1-ubyte.gz");
  if (!o.eval.empty()) {
    parameters p(o.seed);
    io::load_parameters(o.eval, p);
    const double accuracy = test_accuracy(p, test, comm);
    if (comm.is_root()) std::printf("test accuracy %.4f (weights %s)\n", accuracy, o.eval.c_str());
    return 0;
  }
  const auto train = std::make_unique<dataset<train_count>>(o.data + "/train-images-idx3-ubyte.gz", o.data + "/train-labels-idx1-ubyte.gz");
  // One process takes the whole batch; ranks take a shard of at most 32 rows (the trainer's shapes are
  // static: two sizes, not one per rank count).
  if (comm.size() == 1) return train_model<batch>(o, comm, *train, test, t0);
  if constexpr (!std::is_same_v<Comm, dist::single_process>) {
    if (comm.size() > batch) throw error(detail::message("fashion_mnist: ", comm.size(), " ranks for a batch of ", batch, " images: at most ", batch));
    return train_model<batch / 2>(o, comm, *train, test, t0);
  }
  return 1;
}

// Under mpirun, ranks on one host share its cores: cores / (ranks here) threads each (and no more than
// the cores this rank is bound to), unless TENFOLD_NUM_THREADS is set. Before the thread pool starts.
void share_cores(int local_ranks) {
  if (local_ranks <= 1 || std::getenv("TENFOLD_NUM_THREADS")) return;
  int cores = int(std::thread::hardware_concurrency());
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = std::min(cores, CPU_COUNT(&set));
  setenv("TENFOLD_NUM_THREADS", std::to_string(std::max(1, cores / local_ranks)).c_str(), 0);
}
} // namespace

int main(int argc, char** argv) {
#ifdef FASHION_MNIST_MPI
  communicator comm(argc, argv);
#else
  communicator comm;
#endif
  try {
    share_cores(comm.local_size());
    cpu::flush_denormals(); // (after share_cores: it starts the thread pool)
    return run(parse(argc, argv), comm);
  } catch (const std::exception& e) {
    comm.abort(e.what()); // prints the error; under MPI, ends every rank (none waits for this one)
  }
}
