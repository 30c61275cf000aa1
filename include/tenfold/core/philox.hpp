#pragma once
// Philox4x32-10 counter-based RNG (Salmon et al., SC'11) and the per-element draws built on it.
// Element i of a draw is a pure function of (seed, offset, i): no generator state is carried between
// elements, so every backend and every thread count produces the same numbers.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tenfold/core/config.hpp"

namespace tenfold {

// Where a draw starts: the key (seed) and the first counter (offset) it consumes.
struct philox_stream {
    std::uint64_t seed;
    std::uint64_t offset;
};

// Hands out disjoint counter ranges; copy it freely, it is two integers.
class rng {
public:
    explicit constexpr rng(std::uint64_t seed) noexcept : state_{seed, 0} {}

    constexpr std::uint64_t seed() const noexcept { return state_.seed; }
    constexpr std::uint64_t offset() const noexcept { return state_.offset; }

    // Reserve n counters for one draw: returns where the draw starts, and the next draw starts after it.
    constexpr std::uint64_t advance(std::uint64_t n) noexcept {
        const std::uint64_t old = state_.offset;
        state_.offset += n;
        return old;
    }

    // The stream a draw of n elements should use; advances past it.
    constexpr philox_stream reserve(std::uint64_t n) noexcept { return {state_.seed, advance(n)}; }

private:
    philox_stream state_;
};

namespace detail {

// A plain aggregate rather than std::array, whose members are not __device__ in CUDA.
struct u32x4 {
    std::uint32_t v[4];
};
struct u32x2 {
    std::uint32_t v[2];
};

inline constexpr std::uint32_t philox_m0 = 0xD2511F53u;
inline constexpr std::uint32_t philox_m1 = 0xCD9E8D57u;
inline constexpr std::uint32_t philox_w0 = 0x9E3779B9u; // golden ratio
inline constexpr std::uint32_t philox_w1 = 0xBB67AE85u; // sqrt(3) - 1
inline constexpr int philox_rounds = 10;

constexpr TENFOLD_HD std::uint32_t mul_hi(std::uint32_t a, std::uint32_t b) {
    return static_cast<std::uint32_t>((std::uint64_t{a} * b) >> 32);
}
constexpr TENFOLD_HD std::uint32_t mul_lo(std::uint32_t a, std::uint32_t b) { return a * b; }

// Philox4x32 with 10 rounds; bit-exact with Random123's philox4x32_R(10, ctr, key).
constexpr TENFOLD_HD u32x4 philox4x32(u32x4 ctr, u32x2 key) {
    for (int round = 0; round < philox_rounds; ++round) {
        if (round > 0) { // the key is bumped between rounds, not before the first
            key.v[0] += philox_w0;
            key.v[1] += philox_w1;
        }
        const u32x4 in = ctr;
        ctr.v[0] = mul_hi(philox_m1, in.v[2]) ^ in.v[1] ^ key.v[0];
        ctr.v[1] = mul_lo(philox_m1, in.v[2]);
        ctr.v[2] = mul_hi(philox_m0, in.v[0]) ^ in.v[3] ^ key.v[1];
        ctr.v[3] = mul_lo(philox_m0, in.v[0]);
    }
    return ctr;
}

// [0, 1): the top 24 bits are exactly representable in a float, so no value rounds up to 1.
constexpr TENFOLD_HD float uniform01_float(std::uint32_t x) {
    return static_cast<float>(x >> 8) * 0x1.0p-24f;
}
// [0, 1) from the top 53 of 64 bits.
constexpr TENFOLD_HD double uniform01_double(std::uint32_t hi, std::uint32_t lo) {
    const std::uint64_t bits = (std::uint64_t{hi} << 32) | lo;
    return static_cast<double>(bits >> 11) * 0x1.0p-53;
}
// (0, 1]: never zero, so log() in Box-Muller stays finite.
constexpr TENFOLD_HD float uniform01_nonzero_float(std::uint32_t x) {
    return static_cast<float>((x >> 8) + 1u) * 0x1.0p-24f;
}
constexpr TENFOLD_HD double uniform01_nonzero_double(std::uint32_t hi, std::uint32_t lo) {
    const std::uint64_t bits = (std::uint64_t{hi} << 32) | lo;
    return static_cast<double>((bits >> 11) + 1u) * 0x1.0p-53;
}

// Maps u in [0, 1) to [lo, hi). lo + (hi - lo) * u can round up to hi (e.g. float lo=1, hi=2,
// u=1-2^-24); that single value is folded onto lo, a bias of one ulp's probability mass.
// The multiply and add must round separately on every backend: nvcc (and clang) would otherwise
// fuse them into an FMA and the GPU's last bit would differ from the CPU's.
template <class T>
constexpr TENFOLD_HD T scale_uniform(T u, T lo, T hi) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
    T r = lo + (hi - lo) * u;
#if defined(__CUDA_ARCH__)
    if (!__builtin_is_constant_evaluated()) {
        if constexpr (std::is_same_v<T, float>)
            r = __fadd_rn(lo, __fmul_rn(hi - lo, u));
        else
            r = __dadd_rn(lo, __dmul_rn(hi - lo, u));
    }
#endif
    return r < hi ? r : lo;
}

// Counter layout: words 0..1 = offset + i (64-bit, low word first), words 2..3 = stream id;
// key = seed (low word first). The stream id lets one (seed, offset) feed independent sub-draws.
constexpr TENFOLD_HD u32x4 philox_at(std::uint64_t seed, std::uint64_t offset, index_t i,
                                     std::uint64_t stream = 0) {
    const std::uint64_t c = offset + static_cast<std::uint64_t>(i);
    const u32x4 ctr{{static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(c >> 32),
                     static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}};
    const u32x2 key{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
    return philox4x32(ctr, key);
}

template <class T>
concept philox_real = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <philox_real T>
constexpr TENFOLD_HD T uniform_at(std::uint64_t seed, std::uint64_t offset, index_t i, T lo, T hi,
                                  std::uint64_t stream = 0) {
    const u32x4 r = philox_at(seed, offset, i, stream);
    if constexpr (std::is_same_v<T, float>)
        return scale_uniform(uniform01_float(r.v[0]), lo, hi);
    else
        return scale_uniform(uniform01_double(r.v[0], r.v[1]), lo, hi);
}

// Box-Muller, cosine branch only, so element i needs counter i alone (the sine branch would tie
// pairs of elements together and make odd-length or split draws depend on their neighbours).
// Not constexpr: log/cos/sqrt are not constant expressions before C++26.
template <philox_real T>
TENFOLD_HD inline T normal_at(std::uint64_t seed, std::uint64_t offset, index_t i, T mean, T stddev,
                              std::uint64_t stream = 0) {
    const u32x4 r = philox_at(seed, offset, i, stream);
    T u1, u2;
    if constexpr (std::is_same_v<T, float>) {
        u1 = uniform01_nonzero_float(r.v[0]);
        u2 = uniform01_float(r.v[1]);
    } else {
        u1 = uniform01_nonzero_double(r.v[0], r.v[1]);
        u2 = uniform01_double(r.v[2], r.v[3]);
    }
    constexpr T two_pi = T(6.283185307179586476925286766559);
    using std::cos, std::log, std::sqrt;
    return mean + stddev * (sqrt(T(-2) * log(u1)) * cos(two_pi * u2));
}

// 53-bit uniform so that p is resolved to double precision, not float's 2^-24 steps.
constexpr TENFOLD_HD bool bernoulli_at(std::uint64_t seed, std::uint64_t offset, index_t i, double p,
                                       std::uint64_t stream = 0) {
    const u32x4 r = philox_at(seed, offset, i, stream);
    return uniform01_double(r.v[0], r.v[1]) < p;
}

} // namespace detail
} // namespace tenfold
