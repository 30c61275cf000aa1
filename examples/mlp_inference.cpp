// A 4-layer MLP as a C++ program: the forward pass is one expression, its hidden activations are
// planned into one arena at compile time, and running it allocates nothing.
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
  // The logits. Each linear's bias and activation run in its GEMM's store.
  template <class X>
  auto forward(const X& x) const {
    auto h = gelu(linear(x, w1, b1));
    auto g2 = relu(linear(h, w2, b2));
    auto g3 = relu(linear(g2, w3, b3));
    return linear(g3, w4, b4);
  }
};

int main() {
  rng g(7);
  const mlp model(g);
  Tensor<float, shape<batch, in>> x = uniform<shape<batch, in>>(g);

  using plan = arena_plan<decltype(model.forward(x))>;
  static_assert(plan::bytes <= 1 << 20, "the MLP's activations fit a 1 MiB budget");
  alignas(64) static std::byte arena[plan::bytes];

  // Softmax reads the logits three times, so it runs as a second statement over the logits tensor:
  // an expression tree repeats a shared operand (common subexpressions are not merged yet).
  Tensor<float, shape<batch, classes>> logits, probs;
  eval(logits, model.forward(x), arena);
  probs = softmax(logits);

  Tensor<float> checksum = sum(probs * arange<float, classes>(1, 1));
  Tensor<std::int64_t, shape<batch>> predicted = argmax(probs, axis<1>);
  std::printf("mlp_inference: %ld x %ld -> %ld -> %ld -> %ld -> %ld\n", long(batch), long(in), long(h1), long(h2), long(h3),
              long(classes));
  std::printf("  arena: %ld bytes for %d buffers (lower bound %ld, all buffers apart %ld)\n", long(plan::bytes),
              plan::buffers, long(plan::lower_bound), long(plan::total));
  std::printf("  checksum sum(p * class) = %.6f, first predictions: %lld %lld %lld %lld\n", double(checksum()),
              (long long)predicted(0), (long long)predicted(1), (long long)predicted(2), (long long)predicted(3));
  Tensor<float> total = sum(probs);
  return total() > batch - 0.01f && total() < batch + 0.01f ? 0 : 1;
}
