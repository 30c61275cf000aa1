// One bucket length's instantiation of the model (MINILM_BUCKET, set by examples/CMakeLists.txt).
#include <algorithm>
#include <cstring>
#include <memory>

#include "embed.hpp"

namespace minilm {

template <index_t S>
void embed_bucket(const model& m, std::span<const std::vector<std::int32_t>> seqs, float* out) {
  using namespace tenfold;
  // Unused rows: empty (mask 0 throughout): their result, 0, is not copied out.
  auto ids = std::make_unique<Tensor<std::int32_t, shape<batch, S>>>(zeros<std::int32_t, shape<batch, S>>());
  auto mask = std::make_unique<Tensor<float, shape<batch, S>>>(zeros<float, shape<batch, S>>());
  Tensor<std::int32_t, shape<batch>> lens; // zeros
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    lens(index_t(i)) = std::int32_t(seqs[i].size());
    for (std::size_t j = 0; j < seqs[i].size(); ++j) (*ids)(index_t(i), index_t(j)) = seqs[i][j], (*mask)(index_t(i), index_t(j)) = 1.0f;
  }
  Tensor<float, shape<batch, width>> e;
  eval(e, m.forward<batch, S>(*ids, *mask, lens));
  std::memcpy(out, e.data(), seqs.size() * std::size_t(width) * sizeof(float));
}

template void embed_bucket<MINILM_BUCKET>(const model&, std::span<const std::vector<std::int32_t>>, float*);

} // namespace minilm
