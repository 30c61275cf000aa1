#pragma once
// A weight packed once for the CPU GEMM. `linear(x, w, b)` multiplies by wᵀ, and the GEMM first copies
// wᵀ into NR-column panels (cpu/gemm_pack.hpp's pack_b), for every product and every thread: for a
// few tokens through a transformer's weights that copy is a pass over all of them, read from memory
// (all-MiniLM-L6-v2 at 16 tokens: 44% of the forward pass). A `Prepacked<T, shape<N, K>>` holds the
// weight [N, K] (out x in, as PyTorch and safetensors store it) and, beside it, wᵀ already in that
// panel layout for all of K (panels[p][k][c] = w[p NR + c][k], zero past N), made by pack_b itself.
// In expressions it reads as its weight: every path sees an ordinary leaf; where it is the right
// operand of a product seen as wᵀ (linear, matmul(x, transpose(w))), the GEMM reads the panels in place
// of packing (gemm_eval.hpp's batch_matrix). Same panels, same kernels, same order of sums: the same
// bits as the unpacked weight. Twice the memory of the weight.
//
// The panels follow the weight: assigning (`w = expr;`) packs again, and after writing through
// `weights()` (which loaders use: io/parameters.hpp packs after reading), `pack()` must run before the
// next expression reads w; one built before then is a tenfold::error, never stale panels.
#include "tenfold/core/storage.hpp"
#include "tenfold/core/tensor.hpp"
#include "tenfold/cpu/gemm_pack.hpp"

namespace tenfold {
namespace cpu {
// The holder of a Prepacked weight's leaf: the weight for every reader, the panels for the GEMM.
template <class T, index_t K, index_t N>
struct packed_holder {
  const T* ptr;
  const T* panels;
  TENFOLD_HD const T* data() const { return ptr; }
};
template <class H>
inline constexpr bool is_packed_holder_v = false;
template <class T, index_t K, index_t N>
inline constexpr bool is_packed_holder_v<packed_holder<T, K, N>> = true;
} // namespace cpu

template <class T, class S>
class Prepacked {
  static_assert(S::rank == 2, "tenfold::Prepacked: a weight matrix [out, in]");
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "tenfold::Prepacked: float or double (the GEMM's types)");

 public:
  using value_type = T;
  using shape_type = S;
  static constexpr int rank = 2;
  static constexpr std::array<index_t, 2> shape = S::dims;
  static constexpr index_t N = S::dims[0], K = S::dims[1], NR = cpu::gemm_tile<T>::NR;
  static constexpr index_t panel_floats = (N + NR - 1) / NR * NR * K;
  using holder_type = cpu::packed_holder<T, K, N>;
  using leaf_type = detail::leaf<const T, S, detail::canon(strides_of<S>), 0, holder_type>;
  static constexpr index_t size() { return S::size; }
  static std::string shape_string() { return Tensor<T, S>::shape_string(); }

  Prepacked() { pack(); }
  template <expression E>
    requires(!std::is_same_v<std::remove_cvref_t<E>, Prepacked>)
  Prepacked(E&& e) : w_(std::forward<E>(e)) { // NOLINT(google-explicit-constructor): as Tensor's
    pack();
  }
  template <expression E>
    requires(!std::is_same_v<std::remove_cvref_t<E>, Prepacked>)
  Prepacked& operator=(E&& e) {
    w_ = std::forward<E>(e);
    pack();
    return *this;
  }

  const Tensor<T, S>& tensor() const { return w_; }
  const T* data() const { return w_.data(); }
  // The weight to write into (a loader); pack() before the next expression reads it.
  Tensor<T, S>& weights() {
    packed_ = false;
    return w_;
  }
  void pack() {
    cpu::pack_b<T>(cpu::matrix_ref<T>{w_.data(), 1, K}, 0, K, 0, N, panels_.data());
    packed_ = true;
  }
  bool packed() const { return packed_; }
  const T* panels() const { return panels_.data(); } // panel_floats values

  // The leaf an expression reads (core/expr.hpp's as_node).
  leaf_type as_leaf() const {
    if (!packed_)
      throw error(detail::message("tenfold::Prepacked ", shape_string(),
                                  ": the weight was handed out for writing (weights()) and not packed since; call pack()"));
    return {{}, {w_.data(), panels_.data()}};
  }

 private:
  Tensor<T, S> w_;
  detail::storage<T, panel_floats> panels_;
  bool packed_ = false;
};
} // namespace tenfold
