// A 4-layer MLP as a C++ program: the forward pass is one expression, its activations are planned
// into one arena at compile time, and running it allocates nothing.
#include <cstdio>
#include <tenfold/tenfold.hpp>

using namespace tenfold;

constexpr index_t batch = 64, in = 784, h1 = 512, h2 = 256, h3 = 128, classes = 10;

struct mlp {
  // Weights stored [out, in] as in PyTorch; drawn from a seeded counter-based generator.
  Tensor<float, shape<h1, in>> w1;
  Tensor<float, shape<h1>> b1;
  Tensor<float, shape<h2, h1>> w2;
  Tensor<float, shape<h2>> b2;
  Tensor<float, shape<h3, h2>> w3;
  Tensor<float, shape<h3>> b3;
  Tensor<float, shape<classes, h3>> w4;
  Tensor<float, shape<classes>> b4;

  explicit mlp(rng& g) {
    w1 = normal<shape<h1, in>>(g, 0.0f, 0.05f), w2 = normal<shape<h2, h1>>(g, 0.0f, 0.06f);
    w3 = normal<shape<h3, h2>>(g, 0.0f, 0.09f), w4 = normal<shape<classes, h3>>(g, 0.0f, 0.12f);
    b1 = uniform<shape<h1>>(g, -0.1f, 0.1f), b2 = uniform<shape<h2>>(g, -0.1f, 0.1f);
    b3 = uniform<shape<h3>>(g, -0.1f, 0.1f), b4 = uniform<shape<classes>>(g, -0.1f, 0.1f);
  }
  auto parameters() const { return std::tie(w1, b1, w2, b2, w3, b3, w4, b4); }
  // Class probabilities. Each linear's bias and activation run in its GEMM's store; softmax reads the
  // logits three times, so it binds them (a let) and the last GEMM runs once.
  auto forward(const Tensor<float, shape<batch, in>>& x) const {
    auto h = gelu(linear(x, w1, b1));
    auto g2 = relu(linear(h, w2, b2));
    auto g3 = relu(linear(g2, w3, b3));
    return softmax(linear(g3, w4, b4));
  }
};

int main() {
  rng g(7);
  const mlp model(g);
  Tensor<float, shape<batch, in>> x = uniform<shape<batch, in>>(g);

  using program_t = program<const mlp, Tensor<float, shape<batch, in>>>;
  using plan = program_t::plan;
  static_assert(plan::arena_bytes <= 1 << 20, "the MLP's activations fit a 1 MiB budget");
  alignas(64) static std::byte arena[plan::arena_bytes];
  program_t run(model, arena); // allocates nothing, now or when it runs

  Tensor<float, shape<batch, classes>> probs;
  run(probs, x);

  Tensor<float> checksum = sum(probs * arange<float, classes>(1, 1));
  Tensor<std::int64_t, shape<batch>> predicted = argmax(probs, axis<1>);
  std::printf("mlp_inference: %ld x %ld -> %ld -> %ld -> %ld -> %ld\n", long(batch), long(in), long(h1), long(h2), long(h3),
              long(classes));
  std::printf("  weights %ld bytes; activations: arena %ld bytes for %d buffers (lower bound %ld, all apart %ld)\n",
              long(plan::weight_bytes), long(plan::arena_bytes), plan::buffers, long(plan::lower_bound),
              long(plan::activation_total));
  std::printf("  checksum sum(p * class) = %.6f, first predictions: %lld %lld %lld %lld\n", double(checksum()),
              (long long)predicted(0), (long long)predicted(1), (long long)predicted(2), (long long)predicted(3));
  Tensor<float> total = sum(probs);
  return total() > batch - 0.01f && total() < batch + 0.01f ? 0 : 1;
}
