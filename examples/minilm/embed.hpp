#pragma once
// Sentence embeddings in batches of `batch`, each batch padded to the smallest of the static lengths
// `buckets` that holds its longest sentence, so that every shape the model runs is static: one
// instantiation of the model's expression per bucket (each compiled in its own translation unit,
// embed_bucket.cpp, so that they build in parallel).
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "bert.hpp"

namespace minilm {

constexpr index_t batch = 8;
constexpr std::array<index_t, 5> buckets{16, 32, 64, 128, 256};
constexpr index_t max_tokens = buckets.back();

// Embeds up to `batch` token sequences (each starting with [CLS], ending with [SEP], at most S long)
// into out (seqs.size() rows of `width` floats).
template <index_t S>
void embed_bucket(const model& m, std::span<const std::vector<std::int32_t>> seqs, float* out);

extern template void embed_bucket<16>(const model&, std::span<const std::vector<std::int32_t>>, float*);
extern template void embed_bucket<32>(const model&, std::span<const std::vector<std::int32_t>>, float*);
extern template void embed_bucket<64>(const model&, std::span<const std::vector<std::int32_t>>, float*);
extern template void embed_bucket<128>(const model&, std::span<const std::vector<std::int32_t>>, float*);
extern template void embed_bucket<256>(const model&, std::span<const std::vector<std::int32_t>>, float*);

// Every sequence's embedding, row after row ([seqs.size(), width]); at most max_tokens tokens each.
inline std::vector<float> embed(const model& m, const std::vector<std::vector<std::int32_t>>& seqs) {
  std::vector<float> out(seqs.size() * std::size_t(width));
  for (std::size_t first = 0; first < seqs.size(); first += batch) {
    const std::size_t n = std::min<std::size_t>(batch, seqs.size() - first);
    std::size_t longest = 0;
    for (std::size_t i = first; i < first + n; ++i) longest = std::max(longest, seqs[i].size());
    const std::span<const std::vector<std::int32_t>> part(seqs.data() + first, n);
    float* dst = out.data() + first * std::size_t(width);
    if (longest <= 16) embed_bucket<16>(m, part, dst);
    else if (longest <= 32) embed_bucket<32>(m, part, dst);
    else if (longest <= 64) embed_bucket<64>(m, part, dst);
    else if (longest <= 128) embed_bucket<128>(m, part, dst);
    else if (longest <= 256) embed_bucket<256>(m, part, dst);
    else throw tenfold::error(tenfold::detail::message("minilm: a sequence of ", longest, " tokens (at most ", max_tokens, ")"));
  }
  return out;
}

} // namespace minilm
