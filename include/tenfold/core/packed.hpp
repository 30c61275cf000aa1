#pragma once
// tenfold::packed: tensors that live side by side in one allocation, laid out at compile time. Each
// member starts on a 64-byte line; members are listed in groups, and each group is one contiguous run of
// the buffer (its members and the zeros between them), so that one collective moves a group without a
// copy: gradients in buckets, each allreduced as soon as the backward pass has written its members,
// while the rest of the pass goes on. (Within a step, kept slots do this without a hand-made layout:
// the step's plan orders them and cuts the buckets, core/step.hpp; packed is for buffers outside one.)
//
//   using grads = packed<float, group<member<shape<128, 10>, struct w4_>, member<shape<10>, struct b4_>>,
//                               group<member<shape<3, 3, 1, 16>, struct w1_>>>;
//   grads g;                                  // one zeroed allocation of grads::size floats
//   TensorMap<float, shape<128, 10>> w4 = g.get<w4_>();
//   auto req = comm.allreduce_start(g.group<0>());   // w4 and b4: group 0's run of the buffer
//
// The offsets are constants (grads::offset<w4_>, grads::group_begin<0>), so a layout is checked and its
// size known before anything runs: every rank of a data-parallel run computes the same one. A tag names
// one member of one layout; two members with one tag, or a tag the layout lacks, do not compile.
#include <array>
#include <cstddef>
#include <memory>
#include <new>
#include <span>
#include <tuple>
#include <type_traits>

#include "tenfold/core/buffer.hpp"
#include "tenfold/core/tensor_map.hpp"

namespace tenfold {

// One tensor of a packed layout: its shape and the tag that names it.
template <class S, class Tag>
struct member {
  using shape_type = S;
  using tag = Tag;
};
// Members laid out one after another as one contiguous run.
template <class... M>
struct group {};

namespace detail {
template <class M>
struct is_member : std::false_type {};
template <class S, class Tag>
struct is_member<member<S, Tag>> : std::true_type {};
template <class G>
struct is_group : std::false_type {};
template <class... M>
struct is_group<group<M...>> : std::bool_constant<(is_member<M>::value && ...)> {};

template <class... M>
struct member_list {};
template <class... L>
struct concat_members;
template <>
struct concat_members<> {
  using type = member_list<>;
};
template <class... M>
struct concat_members<group<M...>> {
  using type = member_list<M...>;
};
template <class... A, class... B, class... Rest>
struct concat_members<group<A...>, group<B...>, Rest...> : concat_members<group<A..., B...>, Rest...> {};

template <class Tag, class List>
struct member_index;
template <class Tag, class... M>
struct member_index<Tag, member_list<M...>> {
  static constexpr std::array<bool, sizeof...(M)> hits{std::is_same_v<Tag, typename M::tag>...};
  static constexpr std::size_t count = (std::size_t(0) + ... + std::size_t(std::is_same_v<Tag, typename M::tag>));
  static constexpr std::size_t value = [] {
    for (std::size_t i = 0; i < hits.size(); ++i)
      if (hits[i]) return i;
    return hits.size();
  }();
};
template <class... M>
constexpr bool tags_distinct(member_list<M...>) {
  return ((member_index<typename M::tag, member_list<M...>>::count == 1) && ...);
}
// The member named Tag (a placeholder where none is, so that the layout's own static_assert speaks first).
template <class Tag, class List, bool = (member_index<Tag, List>::count == 1)>
struct member_named {
  using type = member<shape<1>, void>;
};
template <class Tag, class... M>
struct member_named<Tag, member_list<M...>, true> {
  using type = std::tuple_element_t<member_index<Tag, member_list<M...>>::value, std::tuple<M...>>;
};
} // namespace detail

template <class T, class... G>
class packed {
  static_assert(std::is_arithmetic_v<T>, "tenfold::packed: the element type must be arithmetic");
  static_assert(sizeof...(G) > 0 && (detail::is_group<G>::value && ...),
                "tenfold::packed: list the members as one or more group<member<shape<...>, Tag>...>");
  using members = typename detail::concat_members<G...>::type;
  static_assert(detail::tags_distinct(members{}), "tenfold::packed: two members share a tag (each tag names one member)");

  static constexpr index_t line = index_t(default_alignment / sizeof(T)); // elements per 64-byte line
  static constexpr index_t round_up(index_t n) { return (n + line - 1) / line * line; }
  static constexpr std::size_t member_count = []<class... M>(detail::member_list<M...>) { return sizeof...(M); }(members{});
  // Member i's first element, and (at member_count) the end of the buffer.
  static constexpr std::array<index_t, member_count + 1> offsets = []<class... M>(detail::member_list<M...>) {
    std::array<index_t, sizeof...(M) + 1> o{};
    const std::array<index_t, sizeof...(M)> sizes{M::shape_type::size...};
    for (std::size_t i = 0; i < sizes.size(); ++i) o[i + 1] = o[i] + round_up(sizes[i]);
    return o;
  }(members{});
  // Group g's first member, and (at groups) the end.
  static constexpr std::array<std::size_t, sizeof...(G) + 1> first_member = [] {
    std::array<std::size_t, sizeof...(G) + 1> f{};
    const std::array<std::size_t, sizeof...(G)> counts{[]<class... M>(group<M...>*) { return sizeof...(M); }(static_cast<G*>(nullptr))...};
    for (std::size_t g = 0; g < counts.size(); ++g) f[g + 1] = f[g] + counts[g];
    return f;
  }();

  template <class Tag>
  static constexpr std::size_t index_of() {
    static_assert(detail::member_index<Tag, members>::count == 1, "tenfold::packed: no member of this layout has this tag");
    return detail::member_index<Tag, members>::value;
  }

 public:
  using value_type = T;
  static constexpr std::size_t groups = sizeof...(G);
  static constexpr index_t size = offsets[member_count]; // elements, padding included
  template <class Tag>
  using shape_of = typename detail::member_named<Tag, members>::type::shape_type;
  template <class Tag>
  static constexpr index_t offset = offsets[index_of<Tag>()];
  template <std::size_t I>
    requires(I < groups)
  static constexpr index_t group_begin = offsets[first_member[I]];
  template <std::size_t I>
    requires(I < groups)
  static constexpr index_t group_end = offsets[first_member[I + 1]];

  packed() : data_(static_cast<T*>(detail::allocate_buffer(sizeof(T) * std::size_t(size), default_alignment))) {
    std::uninitialized_value_construct_n(data_.get(), std::size_t(size)); // (zeros)
  }

  T* data() noexcept { return data_.get(); }
  const T* data() const noexcept { return data_.get(); }
  // The member named Tag, a view of its place in the buffer.
  template <class Tag>
  auto get() {
    return TensorMap<T, shape_of<Tag>>(data_.get() + offset<Tag>);
  }
  template <class Tag>
  auto get() const {
    return TensorMap<const T, shape_of<Tag>>(data_.get() + offset<Tag>);
  }
  // Group I's run: its members and the zeros that align them.
  template <std::size_t I>
  std::span<T> group() {
    static_assert(I < groups, "tenfold::packed: no such group");
    return {data_.get() + group_begin<I>, std::size_t(group_end<I> - group_begin<I>)};
  }
  std::span<T> all() { return {data_.get(), std::size_t(size)}; }
  std::span<const T> all() const { return {data_.get(), std::size_t(size)}; }

 private:
  struct aligned_delete {
    void operator()(T* p) const { detail::free_buffer(p, sizeof(T) * std::size_t(size), default_alignment); }
  };
  std::unique_ptr<T[], aligned_delete> data_;
};

} // namespace tenfold
