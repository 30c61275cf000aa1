#pragma once
// Plain double-precision loops for the models in examples/: the references the model tests compare
// tenfold against (never tenfold itself).
#include <algorithm>
#include <cmath>
#include <vector>

namespace reference {
// ---- a naive transformer block in double -------------------------------------------------------
using mat = std::vector<double>; // row-major

template <class T>
mat to_mat(const T& t) {
  return mat(t.data(), t.data() + T::size());
}
// y[r, o] = sum_i x[r, i] w[o, i] + b[o]
inline mat linear_ref(const mat& x, int rows, int in, const mat& w, const mat& b, int out) {
  mat y(rows * out);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double s = b[o];
      for (int i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}
inline mat layer_norm_ref(const mat& x, int rows, int d, const mat& g, const mat& b) {
  mat y(x.size());
  for (int r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < d; ++i) m += x[r * d + i];
    m /= d;
    for (int i = 0; i < d; ++i) v += (x[r * d + i] - m) * (x[r * d + i] - m);
    v /= d;
    for (int i = 0; i < d; ++i) y[r * d + i] = (x[r * d + i] - m) / std::sqrt(v + 1e-5) * g[i] + b[i];
  }
  return y;
}
inline double gelu_ref(double z) { return 0.5 * z * (1 + std::erf(z / std::sqrt(2.0))); }

template <class B>
mat block_ref(const B& m, const mat& x) {
  constexpr int S = B::tokens, D = B::width, H = B::heads, F = B::hidden, E = B::head_dim;
  const mat h = layer_norm_ref(x, S, D, to_mat(m.ln1_g), to_mat(m.ln1_b));
  const mat qkv = linear_ref(h, S, D, to_mat(m.w_qkv), to_mat(m.b_qkv), 3 * D);
  mat joined(S * D);
  for (int hd = 0; hd < H; ++hd)
    for (int i = 0; i < S; ++i) {
      std::vector<double> p(S);
      double mx = -1e300, z = 0;
      for (int j = 0; j < S; ++j) {
        double s = 0;
        for (int e = 0; e < E; ++e) s += qkv[i * 3 * D + hd * E + e] * qkv[j * 3 * D + D + hd * E + e];
        p[j] = s / std::sqrt(double(E));
        mx = std::max(mx, p[j]);
      }
      for (int j = 0; j < S; ++j) z += p[j] = std::exp(p[j] - mx);
      for (int e = 0; e < E; ++e) {
        double o = 0;
        for (int j = 0; j < S; ++j) o += p[j] / z * qkv[j * 3 * D + 2 * D + hd * E + e];
        joined[i * D + hd * E + e] = o;
      }
    }
  const mat att = linear_ref(joined, S, D, to_mat(m.w_o), to_mat(m.b_o), D);
  mat x1(S * D);
  for (int i = 0; i < S * D; ++i) x1[i] = x[i] + att[i];
  mat f = linear_ref(layer_norm_ref(x1, S, D, to_mat(m.ln2_g), to_mat(m.ln2_b)), S, D, to_mat(m.w_1), to_mat(m.b_1), F);
  for (auto& v : f) v = gelu_ref(v);
  const mat f2 = linear_ref(f, S, F, to_mat(m.w_2), to_mat(m.b_2), D);
  for (int i = 0; i < S * D; ++i) x1[i] += f2[i];
  return x1;
}

} // namespace reference
