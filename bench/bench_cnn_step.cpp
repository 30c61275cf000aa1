// The Fashion-MNIST CNN's training step alone (examples/fashion_mnist/cnn.hpp, trainer<64>::step with
// Adam, one process): synthetic images and labels, so that no data loading, shuffling or test pass is
// in the time. Prints the least mean step time over rounds of steps (a steadier number than an epoch's
// on a noisy machine), and, built with -DTENFOLD_TRACE=1, where a step's time goes nest by nest.
//
//   build/bench/tenfold_bench_cnn_step [ROUNDS] [STEPS_PER_ROUND]     (defaults 12 and 40)
//
// The training run itself (epochs, accuracy, PyTorch in the same run) is bench/run_training.sh.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <tenfold/dist/communicator.hpp>

#include "../examples/fashion_mnist/cnn.hpp"

int main(int argc, char** argv) {
  using namespace tenfold;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 12, per = argc > 2 ? std::atoi(argv[2]) : 40;
  if (rounds < 1 || per < 1) {
    std::fprintf(stderr, "usage: tenfold_bench_cnn_step [ROUNDS >= 1] [STEPS_PER_ROUND >= 1]\n");
    return 2;
  }
  constexpr index_t B = 64;
  cpu::flush_denormals(); // as examples/fashion_mnist
  auto p = std::make_unique<fashion::parameters>(1);
  auto s = std::make_unique<fashion::optimizer_state>();
  auto t = std::make_unique<fashion::trainer<B>>();
  optim::adam opt;
  rng images(3), dropout(4);
  auto x = std::make_unique<Tensor<float, shape<B, 28, 28, 1>>>();
  *x = normal<shape<B, 28, 28, 1>>(images);
  Tensor<std::int64_t, shape<B>> y;
  for (index_t i = 0; i < B; ++i) y(i) = i % fashion::classes;
  dist::single_process comm;
  const fashion::shard all{0, B, B};
  double loss = 0;
  for (int i = 0; i < 20; ++i) loss += t->step(*p, *s, opt, 1e-3f, *x, y, all, dropout, comm); // warm-up
#if defined(TENFOLD_TRACE)
  trace::clear();
#endif
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < per; ++i) loss += t->step(*p, *s, opt, 1e-3f, *x, y, all, dropout, comm);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / per);
  }
  std::printf("CNN training step (batch %ld, %d threads): %.3f ms (least mean over %d rounds of %d steps); loss sum %.6g\n",
              long(B), cpu::thread_pool::instance().size(), best * 1e3, rounds, per, loss);
#if defined(TENFOLD_TRACE)
  std::fprintf(stderr, "%s", trace::summary(60).c_str());
#endif
}
