// tenfold against its peers on the same buffers: Eigen's Tensor module (TensorMap), xtensor (xt::adapt,
// XTENSOR_USE_XSIMD), naive loops, and copy bandwidth, all measured in the same process so that ratios
// between them survive a noisy machine. Every implementation is checked against the naive loop first.
//
// Data size: every full-size tensor of a case is the labelled size (f32, square): 4KiB = 32x32,
// 1MiB = 512x512, 256MiB = 8192x8192. The "bytes" counter counts what an expression logically reads and
// writes once: the chain reads five tensors and writes one (6 x size); chain_scalar reads three (4 x size);
// a reduction reads one and writes a vector; transpose, broadcast (matrix + row vector) and strided
// (dst = src[:, ::2], src twice as wide) read and write one tensor-sized amount each (2 x size); copies
// are 2 x size.
//
// Benchmark names are case/impl/size; bench/report.py turns the JSON into RESULTS.md.
// tenfold's thread count comes from TENFOLD_NUM_THREADS, read once per process, so run.sh runs this
// binary twice. With TENFOLD_NUM_THREADS=1 everything is single-threaded (Eigen's DefaultDevice and xtensor
// never use threads) and the naive loops run too; with more threads the "eigen_pool" (Eigen on a
// ThreadPoolDevice of the same size) and "memcpy_pool" (memcpy split over tenfold's pool) rows run instead.
#define EIGEN_USE_THREADS
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>
#include <xtensor/xadapt.hpp>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include <tenfold/tenfold.hpp>

namespace tf = tenfold;
using tf::index_t;

namespace {

// Uniform in [lo, hi) from a 64-bit LCG: filling 2 GiB with std::mt19937 would take longer than the runs.
template <class T, class S>
void fill_uniform(tf::Tensor<T, S>& t, float lo, float hi, std::uint64_t seed) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : t) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = lo + (hi - lo) * float(s >> 40) * 0x1p-24f;
  }
}

// Every buffer of one size, allocated (and first-touched) once, shared by all implementations.
template <index_t N>
struct buffers {
  using M = tf::shape<N, N>;
  tf::Tensor<float, M> a, x, b, z, y, out;
  tf::Tensor<float, tf::shape<N>> v, vec_out;
  tf::Tensor<float, tf::shape<N, 2 * N>> wide; // strided source
  buffers() {
    fill_uniform(a, -1, 1, 1), fill_uniform(x, -1, 1, 2), fill_uniform(b, -1, 1, 3);
    fill_uniform(z, -1, 1, 4), fill_uniform(y, -3, 3, 5), fill_uniform(v, -1, 1, 6), fill_uniform(wide, -1, 1, 7);
  }
  static buffers& get() {
    static buffers d;
    return d;
  }
};

// ---- peers' views of the same memory ------------------------------------------------------------------
using emat = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
using evec = Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>>;
template <class T, class S>
emat em(tf::Tensor<T, S>& t) {
  return emat(t.data(), S::dims[0], S::dims[1]);
}
template <class T, index_t N>
evec ev(tf::Tensor<T, tf::shape<N>>& t) {
  return evec(t.data(), N);
}
template <class T, class S>
auto xm(tf::Tensor<T, S>& t) {
  return xt::adapt(t.data(), std::size_t(S::size), xt::no_ownership(),
                   std::array<std::size_t, 2>{std::size_t(S::dims[0]), std::size_t(S::dims[1])});
}
template <class T, index_t N>
auto xv(tf::Tensor<T, tf::shape<N>>& t) {
  return xt::adapt(t.data(), std::size_t(N), xt::no_ownership(), std::array<std::size_t, 1>{std::size_t(N)});
}

int pool_threads() { return tf::cpu::thread_pool::instance().size(); }
Eigen::ThreadPoolDevice& eigen_pool() {
  static Eigen::ThreadPool pool(pool_threads());
  static Eigen::ThreadPoolDevice dev(&pool, pool_threads());
  return dev;
}

// A copy with ordinary stores (memcpy switches to non-temporal stores for large sizes; an expression
// evaluator writes with ordinary ones, so both are reported), four batches of the widest vector the build
// targets (AVX-512, AVX2, SSE2: xsimd's default arch, as tenfold's evaluator uses) per step.
template <index_t n>
void copy_stores(float* __restrict d, const float* __restrict s) {
  using B = tf::cpu::batch<float>;
  constexpr index_t w = index_t(B::size);
  static_assert(n % (4 * w) == 0);
  for (index_t i = 0; i < n; i += 4 * w) {
    const B v0 = B::load_unaligned(s + i), v1 = B::load_unaligned(s + i + w);
    const B v2 = B::load_unaligned(s + i + 2 * w), v3 = B::load_unaligned(s + i + 3 * w);
    v0.store_unaligned(d + i), v1.store_unaligned(d + i + w);
    v2.store_unaligned(d + i + 2 * w), v3.store_unaligned(d + i + 3 * w);
  }
}

// ---- registration ---------------------------------------------------------------------------------------
const char* size_label(index_t n) { return n == 32 ? "4KiB" : n == 512 ? "1MiB" : n == 8192 ? "256MiB" : "?"; }

// make(buffers&) returns the callable to time; views are built once, outside the timed loop.
template <index_t N, class Make>
void time_case(benchmark::State& st, const Make& make, double bytes) {
  auto f = make(buffers<N>::get());
  if (N < 8192) f(); // warm the caches (the large buffers' pages were touched when they were filled)
  for (auto _ : st) {
    f();
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(std::int64_t(bytes * double(st.iterations())));
  st.counters["bytes"] = bytes;
}

// The naive loops are registered only in the TENFOLD_NUM_THREADS=1 process, the thread-pool rows
// (Eigen's ThreadPoolDevice, memcpy over tenfold's pool) only in the multi-threaded one: run.sh runs both.
template <index_t N, class Make>
void add(const std::string& kase, const std::string& impl, double bytes, Make make) {
  const bool single = pool_threads() == 1;
  if ((impl == "naive" && !single) || ((impl == "eigen_pool" || impl == "memcpy_pool") && single)) return;
  const std::string name = kase + "/" + impl + "/" + size_label(N);
  benchmark::RegisterBenchmark(name.c_str(), [make, bytes](benchmark::State& st) { time_case<N>(st, make, bytes); })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(N >= 8192 ? 0.25 : 0.1);
}

// Eigen twice: on the DefaultDevice (single-threaded, what `o = expr` does) and on a ThreadPoolDevice
// with tenfold's thread count. make(buffers&, device&) returns the callable.
template <index_t N, class Make>
void add_eigen(const std::string& kase, double bytes, Make make) {
  static Eigen::DefaultDevice serial;
  add<N>(kase, "eigen", bytes, [make](buffers<N>& d) { return make(d, serial); });
  add<N>(kase, "eigen_pool", bytes, [make](buffers<N>& d) { return make(d, eigen_pool()); });
}

// Results of the same expression must agree before any of them is timed.
struct check_failure {};
template <class T, class S>
void expect_close(const char* what, const tf::Tensor<T, S>& got, const tf::Tensor<T, S>& want, float tol) {
  for (index_t i = 0; i < S::size; ++i) {
    const float g = got.data()[i], w = want.data()[i];
    if (!(std::fabs(g - w) <= tol * (1 + std::fabs(w)))) {
      std::fprintf(stderr, "bench_peers: %s differs from the naive loop at %ld: %g vs %g\n", what, long(i), g, w);
      throw check_failure{};
    }
  }
}

template <index_t N>
void register_size() {
  using B = buffers<N>;
  constexpr double T = double(N) * N * sizeof(float), V = double(N) * sizeof(float);
  constexpr index_t n = N * N;

  // ---- copy bandwidth -------------------------------------------------------------------------------
  add<N>("copy", "memcpy", 2 * T,
         [](B& d) { return [&d] { std::memcpy(d.out.data(), d.x.data(), sizeof(float) * n); }; });
  add<N>("copy", "stores", 2 * T, [](B& d) { return [&d] { copy_stores<n>(d.out.data(), d.x.data()); }; });
  add<N>("copy", "memcpy_pool", 2 * T, [](B& d) {
    return [&d] {
      tf::cpu::parallel_for(n, 1 << 15, 16, [&](index_t b, index_t e) {
        std::memcpy(d.out.data() + b, d.x.data() + b, sizeof(float) * (e - b));
      });
    };
  });
  add<N>("copy", "tenfold", 2 * T, [](B& d) { return [&d] { tf::eval(d.out, d.x); }; });

  // ---- fused chain: out = a*x + b*exp(z) - tanh(y) --------------------------------------------------------
  add<N>("chain", "tenfold", 6 * T,
         [](B& d) { return [&d] { d.out = d.a * d.x + d.b * tf::exp(d.z) - tf::tanh(d.y); }; });
  add_eigen<N>("chain", 6 * T, [](B& d, auto& dev) {
    return [o = em(d.out), a = em(d.a), x = em(d.x), b = em(d.b), z = em(d.z), y = em(d.y), &dev]() mutable {
      o.device(dev) = a * x + b * z.exp() - y.tanh();
    };
  });
  add<N>("chain", "xtensor", 6 * T, [](B& d) {
    return [o = xm(d.out), a = xm(d.a), x = xm(d.x), b = xm(d.b), z = xm(d.z), y = xm(d.y)]() mutable {
      xt::noalias(o) = a * x + b * xt::exp(z) - xt::tanh(y);
    };
  });
  add<N>("chain", "naive", 6 * T, [](B& d) {
    return [&d] {
      float* o = d.out.data();
      const float *a = d.a.data(), *x = d.x.data(), *b = d.b.data(), *z = d.z.data(), *y = d.y.data();
      for (index_t i = 0; i < n; ++i) o[i] = a[i] * x[i] + b[i] * std::exp(z[i]) - std::tanh(y[i]);
    };
  });

  // ---- the same chain with scalar coefficients: out = 1.5*x + 0.5*exp(z) - tanh(y) (4 x size) ---------------
  add<N>("chain_scalar", "tenfold", 4 * T,
         [](B& d) { return [&d] { d.out = 1.5f * d.x + 0.5f * tf::exp(d.z) - tf::tanh(d.y); }; });
  add_eigen<N>("chain_scalar", 4 * T, [](B& d, auto& dev) {
    return [o = em(d.out), x = em(d.x), z = em(d.z), y = em(d.y), &dev]() mutable {
      o.device(dev) = 1.5f * x + 0.5f * z.exp() - y.tanh();
    };
  });
  add<N>("chain_scalar", "xtensor", 4 * T, [](B& d) {
    return [o = xm(d.out), x = xm(d.x), z = xm(d.z), y = xm(d.y)]() mutable {
      xt::noalias(o) = 1.5f * x + 0.5f * xt::exp(z) - xt::tanh(y);
    };
  });
  add<N>("chain_scalar", "naive", 4 * T, [](B& d) {
    return [&d] {
      float* o = d.out.data();
      const float *x = d.x.data(), *z = d.z.data(), *y = d.y.data();
      for (index_t i = 0; i < n; ++i) o[i] = 1.5f * x[i] + 0.5f * std::exp(z[i]) - std::tanh(y[i]);
    };
  });

  // ---- row sum (reduce axis 1), column sum (axis 0), max over axis 1 ----------------------------------------
  add<N>("rowsum", "tenfold", T + V, [](B& d) { return [&d] { d.vec_out = tf::sum(d.x, tf::axis<1>); }; });
  add_eigen<N>("rowsum", T + V, [](B& d, auto& dev) {
    return
        [o = ev(d.vec_out), x = em(d.x), &dev]() mutable { o.device(dev) = x.sum(Eigen::array<Eigen::Index, 1>{1}); };
  });
  add<N>("rowsum", "xtensor", T + V, [](B& d) {
    return [o = xv(d.vec_out), x = xm(d.x)]() mutable {
      xt::noalias(o) = xt::sum(x, {1}, xt::evaluation_strategy::immediate);
    };
  });
  add<N>("rowsum", "naive", T + V, [](B& d) {
    return [&d] {
      const float* x = d.x.data();
      for (index_t i = 0; i < N; ++i) {
        float s = 0;
        for (index_t j = 0; j < N; ++j) s += x[i * N + j];
        d.vec_out.data()[i] = s;
      }
    };
  });

  add<N>("colsum", "tenfold", T + V, [](B& d) { return [&d] { d.vec_out = tf::sum(d.x, tf::axis<0>); }; });
  add_eigen<N>("colsum", T + V, [](B& d, auto& dev) {
    return
        [o = ev(d.vec_out), x = em(d.x), &dev]() mutable { o.device(dev) = x.sum(Eigen::array<Eigen::Index, 1>{0}); };
  });
  add<N>("colsum", "xtensor", T + V, [](B& d) {
    return [o = xv(d.vec_out), x = xm(d.x)]() mutable {
      xt::noalias(o) = xt::sum(x, {0}, xt::evaluation_strategy::immediate);
    };
  });
  add<N>("colsum", "naive", T + V, [](B& d) {
    return [&d] {
      const float* x = d.x.data();
      float* o = d.vec_out.data();
      for (index_t j = 0; j < N; ++j) o[j] = 0;
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) o[j] += x[i * N + j];
    };
  });

  add<N>("rowmax", "tenfold", T + V, [](B& d) { return [&d] { d.vec_out = tf::max(d.x, tf::axis<1>); }; });
  add_eigen<N>("rowmax", T + V, [](B& d, auto& dev) {
    return [o = ev(d.vec_out), x = em(d.x), &dev]() mutable {
      o.device(dev) = x.maximum(Eigen::array<Eigen::Index, 1>{1});
    };
  });
  add<N>("rowmax", "xtensor", T + V, [](B& d) {
    return [o = xv(d.vec_out), x = xm(d.x)]() mutable {
      xt::noalias(o) = xt::amax(x, {1}, xt::evaluation_strategy::immediate);
    };
  });
  add<N>("rowmax", "naive", T + V, [](B& d) {
    return [&d] {
      const float* x = d.x.data();
      for (index_t i = 0; i < N; ++i) {
        float m = x[i * N];
        for (index_t j = 1; j < N; ++j) m = x[i * N + j] > m ? x[i * N + j] : m;
        d.vec_out.data()[i] = m;
      }
    };
  });

  // ---- transpose copy: out = x^T ----------------------------------------------------------------------------
  add<N>("transpose", "tenfold", 2 * T, [](B& d) { return [&d] { d.out = tf::transpose(d.x); }; });
  add_eigen<N>("transpose", 2 * T, [](B& d, auto& dev) {
    return [o = em(d.out), x = em(d.x), &dev]() mutable { o.device(dev) = x.shuffle(Eigen::array<int, 2>{1, 0}); };
  });
  add<N>("transpose", "xtensor", 2 * T,
         [](B& d) { return [o = xm(d.out), x = xm(d.x)]() mutable { xt::noalias(o) = xt::transpose(x); }; });
  add<N>("transpose", "naive", 2 * T, [](B& d) {
    return [&d] {
      const float* x = d.x.data();
      float* o = d.out.data();
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) o[i * N + j] = x[j * N + i];
    };
  });

  // ---- broadcast assignment: out = x + v (v a row vector, broadcast down the rows) -------------------------
  add<N>("broadcast", "tenfold", 2 * T + V, [](B& d) { return [&d] { d.out = d.x + d.v; }; });
  add_eigen<N>("broadcast", 2 * T + V, [](B& d, auto& dev) {
    return [o = em(d.out), x = em(d.x), v = ev(d.v), &dev]() mutable {
      o.device(dev) = x + v.reshape(Eigen::array<Eigen::Index, 2>{1, N}).broadcast(Eigen::array<Eigen::Index, 2>{N, 1});
    };
  });
  add<N>("broadcast", "xtensor", 2 * T + V,
         [](B& d) { return [o = xm(d.out), x = xm(d.x), v = xv(d.v)]() mutable { xt::noalias(o) = x + v; }; });
  add<N>("broadcast", "naive", 2 * T + V, [](B& d) {
    return [&d] {
      const float *x = d.x.data(), *v = d.v.data();
      float* o = d.out.data();
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) o[i * N + j] = x[i * N + j] + v[j];
    };
  });

  // ---- strided assignment: out = wide[:, ::2] ---------------------------------------------------------------
  add<N>("strided", "tenfold", 2 * T,
         [](B& d) { return [&d] { d.out = tf::slice<tf::whole, tf::range<tf::none, tf::none, 2>>(d.wide); }; });
  add_eigen<N>("strided", 2 * T, [](B& d, auto& dev) {
    return [o = em(d.out), w = em(d.wide), &dev]() mutable {
      o.device(dev) = w.stride(Eigen::array<Eigen::Index, 2>{1, 2});
    };
  });
  add<N>("strided", "xtensor", 2 * T, [](B& d) {
    return
        [o = xm(d.out), w = xm(d.wide)]() mutable { xt::noalias(o) = xt::view(w, xt::all(), xt::range(0, 2 * N, 2)); };
  });
  add<N>("strided", "naive", 2 * T, [](B& d) {
    return [&d] {
      const float* w = d.wide.data();
      float* o = d.out.data();
      for (index_t i = 0; i < N; ++i)
        for (index_t j = 0; j < N; ++j) o[i * N + j] = w[i * 2 * N + 2 * j];
    };
  });
}

// Runs every implementation of every case once at a small size and compares it with the naive loop.
template <index_t N>
void check_size() {
  using B = buffers<N>;
  auto& d = B::get();
  using M = tf::Tensor<float, tf::shape<N, N>>;
  using Vt = tf::Tensor<float, tf::shape<N>>;
  auto o = em(d.out);
  auto ov = ev(d.vec_out);
  auto xo = xm(d.out);
  auto xov = xv(d.vec_out);
  auto a = em(d.a), x = em(d.x), b = em(d.b), z = em(d.z), y = em(d.y), w = em(d.wide);
  auto v = ev(d.v);
  auto xa = xm(d.a), xx = xm(d.x), xb = xm(d.b), xz = xm(d.z), xy = xm(d.y), xw = xm(d.wide);
  auto xvv = xv(d.v);

  M want;
  for (index_t i = 0; i < N * N; ++i)
    want.data()[i] = d.a.data()[i] * d.x.data()[i] + d.b.data()[i] * std::exp(d.z.data()[i]) - std::tanh(d.y.data()[i]);
  d.out = d.a * d.x + d.b * tf::exp(d.z) - tf::tanh(d.y), expect_close("chain/tenfold", d.out, want, 1e-5f);
  o = a * x + b * z.exp() - y.tanh(), expect_close("chain/eigen", d.out, want, 1e-5f);
  xt::noalias(xo) = xa * xx + xb * xt::exp(xz) - xt::tanh(xy), expect_close("chain/xtensor", d.out, want, 1e-5f);

  Vt vw;
  for (index_t i = 0; i < N; ++i) {
    double s = 0;
    for (index_t j = 0; j < N; ++j) s += d.x.data()[i * N + j];
    vw.data()[i] = float(s);
  }
  d.vec_out = tf::sum(d.x, tf::axis<1>), expect_close("rowsum/tenfold", d.vec_out, vw, 1e-4f);
  ov = x.sum(Eigen::array<Eigen::Index, 1>{1}), expect_close("rowsum/eigen", d.vec_out, vw, 1e-4f);
  xt::noalias(xov) = xt::sum(xx, {1}, xt::evaluation_strategy::immediate),
  expect_close("rowsum/xtensor", d.vec_out, vw, 1e-4f);
  for (index_t j = 0; j < N; ++j) {
    double s = 0;
    for (index_t i = 0; i < N; ++i) s += d.x.data()[i * N + j];
    vw.data()[j] = float(s);
  }
  d.vec_out = tf::sum(d.x, tf::axis<0>), expect_close("colsum/tenfold", d.vec_out, vw, 1e-4f);
  ov = x.sum(Eigen::array<Eigen::Index, 1>{0}), expect_close("colsum/eigen", d.vec_out, vw, 1e-4f);
  xt::noalias(xov) = xt::sum(xx, {0}, xt::evaluation_strategy::immediate),
  expect_close("colsum/xtensor", d.vec_out, vw, 1e-4f);
  for (index_t i = 0; i < N; ++i) {
    float m = d.x.data()[i * N];
    for (index_t j = 0; j < N; ++j) m = std::max(m, d.x.data()[i * N + j]);
    vw.data()[i] = m;
  }
  d.vec_out = tf::max(d.x, tf::axis<1>), expect_close("rowmax/tenfold", d.vec_out, vw, 0);
  ov = x.maximum(Eigen::array<Eigen::Index, 1>{1}), expect_close("rowmax/eigen", d.vec_out, vw, 0);
  xt::noalias(xov) = xt::amax(xx, {1}, xt::evaluation_strategy::immediate),
  expect_close("rowmax/xtensor", d.vec_out, vw, 0);

  for (index_t i = 0; i < N; ++i)
    for (index_t j = 0; j < N; ++j) want.data()[i * N + j] = d.x.data()[j * N + i];
  d.out = tf::transpose(d.x), expect_close("transpose/tenfold", d.out, want, 0);
  o = x.shuffle(Eigen::array<int, 2>{1, 0}), expect_close("transpose/eigen", d.out, want, 0);
  xt::noalias(xo) = xt::transpose(xx), expect_close("transpose/xtensor", d.out, want, 0);

  for (index_t i = 0; i < N; ++i)
    for (index_t j = 0; j < N; ++j) want.data()[i * N + j] = d.x.data()[i * N + j] + d.v.data()[j];
  d.out = d.x + d.v, expect_close("broadcast/tenfold", d.out, want, 0);
  o = x + v.reshape(Eigen::array<Eigen::Index, 2>{1, N}).broadcast(Eigen::array<Eigen::Index, 2>{N, 1});
  expect_close("broadcast/eigen", d.out, want, 0);
  xt::noalias(xo) = xx + xvv, expect_close("broadcast/xtensor", d.out, want, 0);

  for (index_t i = 0; i < N; ++i)
    for (index_t j = 0; j < N; ++j) want.data()[i * N + j] = d.wide.data()[i * 2 * N + 2 * j];
  d.out = tf::slice<tf::whole, tf::range<tf::none, tf::none, 2>>(d.wide),
  expect_close("strided/tenfold", d.out, want, 0);
  o = w.stride(Eigen::array<Eigen::Index, 2>{1, 2}), expect_close("strided/eigen", d.out, want, 0);
  xt::noalias(xo) = xt::view(xw, xt::all(), xt::range(0, 2 * N, 2)), expect_close("strided/xtensor", d.out, want, 0);
}
} // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    check_size<32>();
    check_size<512>();
  } catch (check_failure&) {
    return 1;
  }
  benchmark::AddCustomContext("tenfold_threads", std::to_string(pool_threads()));
  benchmark::AddCustomContext("eigen_version", std::to_string(EIGEN_WORLD_VERSION) + "." +
                                                   std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                                   std::to_string(EIGEN_MINOR_VERSION));
  benchmark::AddCustomContext("xtensor_version", std::to_string(XTENSOR_VERSION_MAJOR) + "." +
                                                     std::to_string(XTENSOR_VERSION_MINOR) + "." +
                                                     std::to_string(XTENSOR_VERSION_PATCH));
  register_size<32>();
  register_size<512>();
  register_size<8192>();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
