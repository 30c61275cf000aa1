// Row-fused composites — softmax, layer_norm, rms_norm over the last axis — against (a) the same
// definition with every step materialised into a tensor (what an eager framework does), (b) Eigen's
// Tensor module, (c) xtensor, and (d) the copy bound (memcpy of the input to the output: the least
// any of them can do, since each reads x once and writes the result once). All in one process on
// the same buffers; each implementation is checked against a double-precision loop first.
//
// softmax also runs its two forms by name (two_pass, online: ops/softmax_config.hpp); "tenfold" is the
// one the build machine's tuned table chooses. Names are op/impl/shape; the "bytes" counter is 2 x the tensor (one
// read, one write), so bytes_per_second of copy is the bound. Times are CPU times (Google Benchmark's default): single-
// threaded runs on a shared machine lose wall time to other processes that is not theirs.
// bench/run_rows.sh runs it; bench/rows_report.py turns the JSON into the table of bench/RESULTS.md.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <unsupported/Eigen/CXX11/Tensor>
#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xtensor.hpp>

#include <tenfold/tenfold.hpp>

namespace tf = tenfold;
using tf::index_t;

namespace {

template <index_t R, index_t C>
struct data {
  using M = tf::shape<R, C>;
  tf::Tensor<float, M> x, out, t1, t2; // t1, t2: the materialised version's intermediates
  tf::Tensor<float, tf::shape<R, 1>> r1, r2;
  tf::Tensor<float, tf::shape<C>> gamma, beta;
  data() {
    std::uint64_t s = 12345;
    auto next = [&s] {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      return float(s >> 40) * 0x1p-24f;
    };
    for (auto& v : x) v = 8 * next() - 4;
    for (auto& v : gamma) v = 0.5f + next();
    for (auto& v : beta) v = next() - 0.5f;
  }
  static data& get() {
    static data d;
    return d;
  }
};

using emat = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
using evec = Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>>;
template <class S>
emat em(tf::Tensor<float, S>& t) {
  return emat(t.data(), S::dims[0], S::dims[1]);
}
template <class S>
auto xm(tf::Tensor<float, S>& t) {
  return xt::adapt(t.data(), std::size_t(S::size), xt::no_ownership(),
                   std::array<std::size_t, 2>{std::size_t(S::dims[0]), std::size_t(S::dims[1])});
}

enum class op { softmax, layer_norm, rms_norm };
enum class impl { tenfold, two_pass, online, materialized, eigen, xtensor, copy };

template <op O, impl I, index_t R, index_t C>
void run_once(data<R, C>& d) {
  using namespace tf;
  constexpr float eps = 1e-5f;
  if constexpr (I == impl::copy) {
    std::memcpy(d.out.data(), d.x.data(), sizeof(float) * R * C);
  } else if constexpr (I == impl::two_pass || I == impl::online) {
    // softmax's two forms whatever the tuned table chooses (ops/softmax_config.hpp; "tenfold" is the chosen one)
    using last = detail::mask_holder<detail::canon(std::array<bool, 2>{false, true})>;
    if constexpr (I == impl::two_pass) d.out = detail::softmax_two_pass<last>(detail::as_node(d.x));
    else d.out = detail::softmax_online<last>(detail::as_node(d.x));
  } else if constexpr (I == impl::tenfold) {
    if constexpr (O == op::softmax) d.out = softmax(d.x);
    else if constexpr (O == op::layer_norm) d.out = layer_norm(d.x, d.gamma, d.beta, eps);
    else d.out = rms_norm(d.x, d.gamma, eps);
  } else if constexpr (I == impl::materialized) {
    // The same definitions, one step per pass, each step's result in a tensor.
    if constexpr (O == op::softmax) {
      d.r1 = max(d.x, axis<1>, keepdims);
      d.t1 = d.x - d.r1;
      d.t2 = exp(d.t1);
      d.r2 = sum(d.t2, axis<1>, keepdims);
      d.out = d.t2 / d.r2;
    } else if constexpr (O == op::layer_norm) {
      d.r1 = mean(d.x, axis<1>, keepdims);
      d.t1 = d.x - d.r1;
      d.t2 = square(d.t1);
      d.r2 = mean(d.t2, axis<1>, keepdims);
      d.r2 = rsqrt(d.r2 + eps);
      d.t2 = d.t1 * d.r2;
      d.out = d.t2 * d.gamma + d.beta;
    } else {
      d.t1 = square(d.x);
      d.r1 = mean(d.t1, axis<1>, keepdims);
      d.r1 = rsqrt(d.r1 + eps);
      d.t2 = d.x * d.r1;
      d.out = d.t2 * d.gamma;
    }
  } else if constexpr (I == impl::eigen) {
    auto x = em(d.x);
    auto out = em(d.out);
    const Eigen::array<int, 1> rows{1};
    const Eigen::array<Eigen::Index, 2> col{R, 1}, bc{1, C}, rowv{1, C}, bcr{R, 1};
    // Row reductions are .eval()'d into small temporaries, as Eigen's documentation advises: inside a
    // broadcast, Eigen would otherwise recompute each reduction for every element it broadcasts to.
    using vec = Eigen::Tensor<float, 1, Eigen::RowMajor>;
    if constexpr (O == op::softmax) {
      const vec m = x.maximum(rows);
      auto e = (x - m.reshape(col).broadcast(bc)).exp();
      const vec s = e.sum(rows);
      out = e / s.reshape(col).broadcast(bc);
    } else if constexpr (O == op::layer_norm) {
      auto g = evec(d.gamma.data(), C).reshape(rowv).broadcast(bcr);
      auto b = evec(d.beta.data(), C).reshape(rowv).broadcast(bcr);
      const vec m = x.mean(rows);
      auto centered = x - m.reshape(col).broadcast(bc);
      const vec r = (centered.square().mean(rows) + eps).rsqrt();
      out = centered * r.reshape(col).broadcast(bc) * g + b;
    } else {
      auto g = evec(d.gamma.data(), C).reshape(rowv).broadcast(bcr);
      const vec r = (x.square().mean(rows) + eps).rsqrt();
      out = x * r.reshape(col).broadcast(bc) * g;
    }
  } else {
    auto x = xm(d.x);
    auto out = xm(d.out);
    auto g = xt::adapt(d.gamma.data(), std::size_t(C), xt::no_ownership(), std::array<std::size_t, 1>{std::size_t(C)});
    // Reductions evaluated immediately: xtensor's lazy reducers would recompute per element.
    if constexpr (O == op::softmax) {
      auto m = xt::amax(x, {1}, xt::keep_dims | xt::evaluation_strategy::immediate);
      auto e = xt::eval(xt::exp(x - m));
      xt::noalias(out) = e / xt::sum(e, {1}, xt::keep_dims | xt::evaluation_strategy::immediate);
    } else if constexpr (O == op::layer_norm) {
      auto b = xt::adapt(d.beta.data(), std::size_t(C), xt::no_ownership(), std::array<std::size_t, 1>{std::size_t(C)});
      auto m = xt::mean(x, {1}, xt::keep_dims | xt::evaluation_strategy::immediate);
      auto v = xt::mean(xt::square(x - m), {1}, xt::keep_dims | xt::evaluation_strategy::immediate);
      xt::noalias(out) = (x - m) / xt::sqrt(v + eps) * g + b;
    } else {
      auto ms = xt::mean(xt::square(x), {1}, xt::keep_dims | xt::evaluation_strategy::immediate);
      xt::noalias(out) = x / xt::sqrt(ms + eps) * g;
    }
  }
}

// The double-precision reference for row r.
template <op O, index_t R, index_t C>
void reference_row(data<R, C>& d, index_t r, std::vector<double>& y) {
  const float* x = d.x.data() + r * C;
  y.assign(C, 0.0);
  if constexpr (O == op::softmax) {
    double m = -INFINITY, s = 0;
    for (index_t j = 0; j < C; ++j) m = std::max(m, double(x[j]));
    for (index_t j = 0; j < C; ++j) s += y[j] = std::exp(x[j] - m);
    for (auto& v : y) v /= s;
  } else if constexpr (O == op::layer_norm) {
    double m = 0, v = 0;
    for (index_t j = 0; j < C; ++j) m += x[j];
    m /= C;
    for (index_t j = 0; j < C; ++j) v += (x[j] - m) * (x[j] - m);
    v /= C;
    for (index_t j = 0; j < C; ++j) y[j] = (x[j] - m) / std::sqrt(v + 1e-5) * d.gamma(j) + d.beta(j);
  } else {
    double ms = 0;
    for (index_t j = 0; j < C; ++j) ms += double(x[j]) * x[j];
    ms /= C;
    for (index_t j = 0; j < C; ++j) y[j] = x[j] / std::sqrt(ms + 1e-5) * d.gamma(j);
  }
}

template <op O, impl I, index_t R, index_t C>
void bench(benchmark::State& st) {
  auto& d = data<R, C>::get();
  run_once<O, I>(d);
  if constexpr (I != impl::copy) {
    std::vector<double> y;
    for (index_t r : {index_t(0), R / 2, R - 1}) {
      reference_row<O>(d, r, y);
      for (index_t j = 0; j < C; ++j) {
        const double got = d.out.data()[r * C + j];
        if (!(std::abs(got - y[j]) <= 1e-4 * (1 + std::abs(y[j])))) {
          st.SkipWithError("result differs from the double-precision reference");
          return;
        }
      }
    }
  }
  for (auto _ : st) {
    run_once<O, I>(d);
    benchmark::DoNotOptimize(d.out.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(st.iterations() * 2 * R * C * index_t(sizeof(float)));
}

template <op O, index_t R, index_t C>
void register_all(const char* name) {
  const std::string shape = std::to_string(R) + "x" + std::to_string(C);
  auto reg = [&](const char* impl_name, auto fn) {
    benchmark::RegisterBenchmark((std::string(name) + "/" + impl_name + "/" + shape).c_str(), fn)->Unit(benchmark::kMicrosecond);
  };
  reg("tenfold", bench<O, impl::tenfold, R, C>);
  if constexpr (O == op::softmax) {
    reg("two_pass", bench<O, impl::two_pass, R, C>);
    reg("online", bench<O, impl::online, R, C>);
  }
  reg("materialized", bench<O, impl::materialized, R, C>);
  reg("eigen", bench<O, impl::eigen, R, C>);
  reg("xtensor", bench<O, impl::xtensor, R, C>);
  reg("copy", bench<O, impl::copy, R, C>);
}
} // namespace

int main(int argc, char** argv) {
  register_all<op::softmax, 4096, 1024>("softmax");
  register_all<op::softmax, 64, 32768>("softmax");
  register_all<op::layer_norm, 4096, 1024>("layer_norm");
  register_all<op::layer_norm, 64, 32768>("layer_norm");
  register_all<op::rms_norm, 4096, 1024>("rms_norm");
  register_all<op::rms_norm, 64, 32768>("rms_norm");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
