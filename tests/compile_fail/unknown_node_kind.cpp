// A node kind of its own (here a user's node with one child) that the one walk does not know stops at
// compile time with a message naming the file to extend, instead of being evaluated by some default.
#include <tenfold/tenfold.hpp>
using namespace tenfold;

template <class C>
struct twice_node : node_base { // declares its children and rebuilds itself, as every node does
  using value_type = float;
  using shape_type = typename C::shape_type;
  static constexpr int rank = shape_type::rank;
  C arg;
  template <class C2>
  auto with_children(detail::tuple<C2>&& c) const { // core/tuple.hpp
    return twice_node<C2>{{}, detail::get<0>(std::move(c))};
  }
  float at(const index_t* idx) const { return 2.0f * arg.at(idx); }
  static std::string str() { return "twice"; }
};

int main() {
  Tensor<float, shape<4>> x, y;
#ifdef TENFOLD_COMPILE_FAIL_CONTROL
  y = x * 2.0f;
#else
  y = twice_node<decltype(detail::as_node(x))>{{}, detail::as_node(x)};
#endif
}
