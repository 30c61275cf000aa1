// Tensors, expressions, broadcasting, element types, aliasing and the expression-lifetime guarantees.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <tenfold/dist/communicator.hpp>
#include <tenfold/tenfold.hpp>

using namespace tenfold;

TEST_CASE("tensor construction, access and errors", "[core]") {
  Tensor<float, shape<2, 3>> a{1, 2, 3, 4, 5, 6};
  STATIC_REQUIRE(decltype(a)::size() == 6);
  STATIC_REQUIRE(decltype(a)::rank == 2);
  STATIC_REQUIRE(decltype(a)::shape[1] == 3);
  CHECK(a(1, 2) == 6);
  CHECK(a.data()[4] == 5);
  CHECK_THROWS_AS(a(2, 0), error);
  CHECK_THROWS_WITH(a(0, 3), Catch::Contains("out of range") && Catch::Contains("[2,3]"));
  CHECK_THROWS_WITH((Tensor<float, shape<2, 2>>{1, 2, 3}), Catch::Contains("needs 4"));
  Tensor<double, shape<3, 3>> z;
  for (double v : z) CHECK(v == 0.0);
  Tensor<int, shape<>> s{7};
  CHECK(s() == 7);
}

TEST_CASE("large tensors live on the heap, so they may be locals", "[core]") {
  Tensor<float, shape<4096, 4096>> t;
  CHECK(t(4095, 4095) == 0.0f);
  t = t + 1.0f;
  CHECK(t(4095, 4095) == 1.0f);
  STATIC_REQUIRE(sizeof(t) < 64);
}

// Buffers from 2 MiB on start on a 2 MiB boundary and are advised for transparent huge pages
// (core/buffer.hpp): Linux's smaps says "THPeligible: 1" for their mapping where the system lends huge
// pages on advice or always, whether or not it had one to give at the time.
TEST_CASE("large buffers start on a huge page boundary and are advised for huge pages", "[core]") {
  STATIC_REQUIRE(detail::buffer_alignment(std::size_t(2) << 20, 64) == std::size_t(2) << 20);
  STATIC_REQUIRE(detail::buffer_alignment((std::size_t(2) << 20) - 1, 64) == 64);
  Tensor<float, shape<1024, 1024>> big; // 4 MiB
  CHECK(reinterpret_cast<std::uintptr_t>(big.data()) % (std::size_t(2) << 20) == 0);
  Tensor<float, shape<100, 100>> small;
  CHECK(reinterpret_cast<std::uintptr_t>(small.data()) % 64 == 0);
  arena_buffer arena(std::size_t(3) << 20), none;
  CHECK(arena.size() == std::size_t(3) << 20);
  CHECK(reinterpret_cast<std::uintptr_t>(arena.data()) % (std::size_t(2) << 20) == 0);
  CHECK(none.data() == nullptr);
  std::byte* p = arena.data();
  none = std::move(arena);
  CHECK((none.data() == p && none.size() == std::size_t(3) << 20 && arena.data() == nullptr));
#if defined(__linux__)
  std::string mode;
  if (std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled"); f) std::getline(f, mode);
  if (mode.find("[always]") == std::string::npos && mode.find("[madvise]") == std::string::npos) {
    WARN("transparent huge pages are off here ('" << mode << "'): the advice is not checked");
    return;
  }
  // the smaps entry of the mapping holding the tensor
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(big.data());
  bool inside = false, found = false, eligible = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) // (a mapping's first line: its address range)
      inside = lo <= at && at < hi, found = found || inside;
    else if (inside && line.rfind("THPeligible:", 0) == 0) eligible = line.find('1') != std::string::npos;
  }
  CHECK(found);
  CHECK(eligible);
#endif
}

TEST_CASE("broadcasting follows NumPy", "[core]") {
  Tensor<float, shape<2, 1, 3>> a{1, 2, 3, 4, 5, 6};
  Tensor<float, shape<4, 1>> b{10, 20, 30, 40};
  Tensor<float, shape<2, 4, 3>> c = a + b;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) CHECK(c(i, j, k) == a(i, 0, k) + b(j, 0));
  Tensor<float, shape<2, 4, 3>> d = 2.0f * a - b / 2;
  CHECK(d(1, 3, 2) == 2 * 6 - 20.0f);
}

TEST_CASE("type promotion", "[core]") {
  Tensor<int, shape<3>> i{1, 2, 3};
  Tensor<float, shape<3>> f{0.5f, 0.5f, 0.5f};
  STATIC_REQUIRE(std::is_same_v<typename decltype(i + f)::value_type, float>);
  STATIC_REQUIRE(std::is_same_v<typename decltype(i + 1)::value_type, int>);
  STATIC_REQUIRE(std::is_same_v<typename decltype(i * 1.5)::value_type, float>);
  STATIC_REQUIRE(std::is_same_v<typename decltype(i / i)::value_type, float>);
  STATIC_REQUIRE(std::is_same_v<typename decltype(exp(i))::value_type, float>);
  STATIC_REQUIRE(std::is_same_v<typename decltype(i < f)::value_type, bool>);
  Tensor<float, shape<3>> q = i / 2;
  CHECK(q(0) == 0.5f);
  Tensor<int, shape<3>> m = i * 3 + 1;
  CHECK(m(2) == 10);
  Tensor<bf16, shape<3>> h = cast<bf16>(f * 2.0f); // narrowing: explicit
  CHECK(float(h(1)) == 1.0f);
  Tensor<float, shape<3>> back = h + f;
  CHECK(back(2) == 1.5f);
}

TEST_CASE("expressions are lazy and safe to keep in auto", "[core]") {
  Tensor<float, shape<5>> y{1, 2, 3, 4, 5};
  auto make = [] { return Tensor<float, shape<5>>{0, 1, 2, 3, 4}; };
  auto e = exp(make() + 1.0f) * y; // the temporary tensor is owned by the expression
  Tensor<float, shape<5>> r = e;
  for (int i = 0; i < 5; ++i) CHECK(r(i) == Approx(std::exp(float(i) + 1.0f) * float(i + 1)));
  y(0) = 100; // y is referenced, so a later evaluation sees the change
  Tensor<float, shape<5>> r2 = e;
  CHECK(r2(0) == Approx(std::exp(1.0f) * 100));
}

TEST_CASE("aliasing: assigning a view of a tensor to itself is safe", "[core]") {
  Tensor<float, shape<3, 3>> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  x = transpose(x);
  CHECK(x(0, 1) == 4);
  CHECK(x(1, 0) == 2);
  CHECK(x(2, 1) == 6);
  Tensor<float, shape<6>> v{1, 2, 3, 4, 5, 6};
  v = flip(v) + v; // reads v through a different index map
  for (int i = 0; i < 6; ++i) CHECK(v(i) == 7);
  x += 1.0f;
  CHECK(x(0, 0) == 2);
}

// GCC 12 merges class-type template arguments that differ only in which elements are zero; the
// library canonicalises them (see core/shape.hpp). This catches a regression: broadcasting a vector
// along rows and along columns must give different results.
TEST_CASE("strides {0,1} and {1,0} stay distinct", "[core]") {
  Tensor<float, shape<3>> v{1, 2, 3};
  Tensor<float, shape<3, 3>> rows = broadcast_to<shape<3, 3>>(v);
  Tensor<float, shape<3, 1>> vc = reshape<3, 1>(v);
  Tensor<float, shape<3, 3>> cols = broadcast_to<shape<3, 3>>(vc);
  CHECK(rows(0, 2) == 3);
  CHECK(cols(0, 2) == 1);
  Tensor<float, shape<3>> s1 = sum(rows, axis<0>);
  Tensor<float, shape<3>> s0 = sum(rows, axis<1>);
  CHECK(s1(0) == 3);
  CHECK(s0(0) == 6);
}

TEST_CASE("bool tensors and masks", "[core]") {
  Tensor<float, shape<7>> x{-3, -2, -1, 0, 1, 2, 3};
  Tensor<bool, shape<7>> pos = x > 0.0f;
  CHECK(!pos(3));
  CHECK(pos(4));
  Tensor<float, shape<7>> r = where(x > 0.0f, x, 0.0f);
  CHECK(r(0) == 0);
  CHECK(r(6) == 3);
  Tensor<bool, shape<7>> both = (x > -2.0f) && (x < 2.0f);
  CHECK(both(1) == false);
  CHECK(both(2) == true);
  Tensor<float, shape<7>> masked = where(pos, x * 2.0f, x);
  CHECK(masked(5) == 4);
  CHECK(masked(1) == -2);
}

TEST_CASE("every node names itself", "[core]") {
  Tensor<float, shape<2, 3>> a;
  auto e = exp(a + 1.0f);
  CHECK(detail::str<decltype(e)>() == "exp(add(float32[2,3], float32))");
}

// The block path (transposed operands, in-register transposes, streaming stores for large outputs)
// against an index computation, at sizes with and without ragged edges.
template <class T, index_t B, index_t M, index_t N>
void check_transposed_expression() {
  using In = shape<B, N, M>;
  using R = std::conditional_t<std::is_integral_v<T>, float, T>;
  rng g(3);
  Tensor<T, In> x = cast<T>(floor(uniform<In, R>(g, -100, 100)));
  Tensor<T, shape<B, M, N>> y = cast<T>(floor(uniform<shape<B, M, N>, R>(g, -100, 100)));
  Tensor<T, shape<N>> bias = cast<T>(floor(uniform<shape<N>, R>(g, -100, 100)));
  Tensor<T, shape<B, M, N>> out = permute<0, 2, 1>(x) * T(2) + y - bias;
  Tensor<T, shape<B, M, N>> plain = permute<0, 2, 1>(x);
  bool ok = true, ok_plain = true;
  for (index_t b = 0; b < B; ++b)
    for (index_t i = 0; i < M; ++i)
      for (index_t j = 0; j < N; ++j) {
        ok = ok && out(b, i, j) == x(b, j, i) * T(2) + y(b, i, j) - bias(j);
        ok_plain = ok_plain && plain(b, i, j) == x(b, j, i);
      }
  CHECK(ok);
  CHECK(ok_plain);
}

TEST_CASE("transposed operands at ragged and exact block sizes", "[core][transpose]") {
  check_transposed_expression<float, 1, 1, 1>();
  check_transposed_expression<float, 1, 16, 16>();
  check_transposed_expression<float, 2, 37, 29>();
  check_transposed_expression<float, 3, 64, 48>();
  check_transposed_expression<double, 2, 37, 29>();
  check_transposed_expression<double, 1, 24, 8>();
  check_transposed_expression<float, 1, 1536, 1552>(); // > 8 MiB: streaming stores, threads
  check_transposed_expression<int, 2, 33, 17>();       // no block path for int: gathers
}

TEST_CASE("transpose into a half-precision tensor and of a flipped view", "[core][transpose]") {
  Tensor<float, shape<20, 18>> x = reshape<20, 18>(arange<float, 360>());
  Tensor<bf16, shape<18, 20>> h = cast<bf16>(transpose(x));
  Tensor<float, shape<18, 20>> f = transpose(flip<0>(x));
  for (int i = 0; i < 18; ++i)
    for (int j = 0; j < 20; ++j) {
      CHECK(float(h(i, j)) == float(bf16(x(j, i))));
      CHECK(f(i, j) == x(19 - j, i));
    }
}

// A reduction broadcast back along the axes it reduced is computed once per row (cpu/rows.hpp);
// the values must match a direct computation, including rows of ±inf and huge values.
TEST_CASE("row-fused reductions: softmax from its plain definition", "[core][fusion]") {
  using S = shape<6, 37>;
  rng g(11);
  Tensor<float, S> x = normal<S>(g, 0.0f, 4.0f);
  x(1, 3) = 1e4f;
  x(2, 5) = -1e4f;
  x(3, 0) = std::numeric_limits<float>::infinity();
  for (int j = 0; j < 37; ++j) x(4, j) = -std::numeric_limits<float>::infinity();
  auto e = exp(x - max(x, axis<1>, keepdims));
  Tensor<float, S> y = e / sum(e, axis<1>, keepdims);
  for (int i = 0; i < 6; ++i) {
    long double m = -INFINITY, z = 0;
    for (int j = 0; j < 37; ++j) m = std::max<long double>(m, x(i, j));
    for (int j = 0; j < 37; ++j) z += std::exp((long double)x(i, j) - m);
    for (int j = 0; j < 37; ++j) {
      const long double want = std::exp((long double)x(i, j) - m) / z;
      if (std::isnan(want)) CHECK(std::isnan(y(i, j)));
      else CHECK(y(i, j) == Approx(double(want)).margin(1e-7));
    }
  }
  CHECK(y(1, 3) == 1.0f);
  CHECK(std::isnan(y(3, 0))); // inf - inf: the math says NaN
  CHECK(std::isnan(y(4, 0))); // an all -inf row has no softmax
  Tensor<float, shape<6, 37>> centered = x - mean(x, axis<-1>, keepdims);
  CHECK(centered(0, 0) == Approx(x(0, 0) - [&] { double s = 0; for (int j = 0; j < 37; ++j) s += x(0, j); return s / 37; }()).margin(1e-5));
}

// Step-2 slices and flips load whole vectors and permute them (cpu/transpose.hpp); the last vector of a
// step-2 slice must not read past the operand's end (masked load).
template <class T, index_t N>
void check_step2_and_flip() {
  Tensor<T, shape<3, N>> x = reshape<3, N>(arange<T, 3 * N>(1, 1));
  Tensor<T, shape<3, (N + 1) / 2>> even = slice<whole, range<0, N, 2>>(x);
  Tensor<T, shape<3, N>> rev = flip<1>(x) * T(2);
  bool ok = true;
  for (index_t i = 0; i < 3; ++i) {
    for (index_t j = 0; j < (N + 1) / 2; ++j) ok = ok && even(i, j) == x(i, 2 * j);
    for (index_t j = 0; j < N; ++j) ok = ok && rev(i, j) == 2 * x(i, N - 1 - j);
  }
  CHECK(ok);
}

TEST_CASE("step-2 slices and flips at odd lengths", "[core][views]") {
  check_step2_and_flip<float, 33>();
  check_step2_and_flip<float, 63>();
  check_step2_and_flip<float, 64>();
  check_step2_and_flip<double, 17>();
  check_step2_and_flip<double, 31>();
}

// The tuple that holds a node's children (core/tuple.hpp): elements by value and by reference, each
// reached as the tuple is (lvalue, const, rvalue), and unpacked the same way.
TEST_CASE("detail::tuple: elements, references and value categories", "[core]") {
  using detail::get;
  int x = 3;
  std::string s = "kept";
  detail::tuple<int, std::string> t{1, "two"};
  CHECK(get<0>(t) == 1);
  CHECK(get<1>(t) == "two");
  STATIC_REQUIRE(std::is_same_v<decltype(get<1>(t)), std::string&>);
  STATIC_REQUIRE(std::is_same_v<decltype(get<1>(std::as_const(t))), const std::string&>);
  STATIC_REQUIRE(std::is_same_v<decltype(get<1>(std::move(t))), std::string&&>);
  STATIC_REQUIRE(std::is_same_v<detail::tuple_element_t<1, decltype(t)>, std::string>);
  STATIC_REQUIRE(detail::tuple_size_v<decltype(t)> == 2);

  auto r = detail::forward_as_tuple(x, std::move(s));
  STATIC_REQUIRE(std::is_same_v<decltype(r), detail::tuple<int&, std::string&&>>);
  get<0>(r) = 4; // writes through to x
  CHECK(x == 4);
  // An rvalue tuple hands its elements on as rvalues: the string moves out once, into `moved`.
  const std::string moved = detail::unpack([](int& a, std::string&& b) { return std::to_string(a) + std::move(b); }, std::move(r));
  CHECK(moved == "4kept");
  CHECK(detail::unpack([](const auto&... v) { return (0 + ... + v); }, detail::make_tuple(1, 2, 3)) == 6);
  CHECK(detail::unpack([](auto... v) { return sizeof...(v); }, detail::tuple<>{}) == 0);

  auto [a, b] = t; // structured bindings, through std::tuple_size and std::tuple_element
  CHECK(a == 1);
  CHECK(b == "two");
  detail::tuple<detail::tuple<int>> nested{detail::tuple<int>{7}};
  CHECK(get<0>(get<0>(nested)) == 7);
}

TEST_CASE("packed: members on 64-byte lines, groups contiguous, maps into one buffer", "[core][packed]") {
  using L = packed<float, group<member<shape<5, 3>, struct pa_>, member<shape<2>, struct pb_>>,
                   group<member<shape<>, struct pc_>>, group<member<shape<16>, struct pd_>, member<shape<17>, struct pe_>>>;
  // 15 -> 16, 2 -> 16, 1 -> 16, 16, 17 -> 32 floats
  STATIC_REQUIRE(L::offset<pa_> == 0 && L::offset<pb_> == 16 && L::offset<pc_> == 32 && L::offset<pd_> == 48 && L::offset<pe_> == 64);
  STATIC_REQUIRE(L::size == 96 && L::groups == 3);
  STATIC_REQUIRE(L::group_begin<0> == 0 && L::group_end<0> == 32 && L::group_begin<1> == 32 && L::group_end<1> == 48);
  STATIC_REQUIRE(L::group_begin<2> == 48 && L::group_end<2> == L::size);
  STATIC_REQUIRE(std::is_same_v<L::shape_of<pa_>, shape<5, 3>>);
  using D = packed<double, group<member<shape<3>, struct qa_>, member<shape<9>, struct qb_>>>; // 8 doubles a line
  STATIC_REQUIRE(D::offset<qb_> == 8 && D::size == 24);

  L p;
  CHECK(reinterpret_cast<std::uintptr_t>(p.data()) % 64 == 0);
  for (float v : p.all()) CHECK(v == 0.0f); // zeroed, padding included
  auto a = p.get<pa_>();
  STATIC_REQUIRE(std::is_same_v<decltype(a), TensorMap<float, shape<5, 3>>>);
  a = full<float, shape<5, 3>>(2.0f);
  p.get<pe_>() = arange<float, 17>();
  p.get<pc_>() = full<float, shape<>>(-1.0f);
  CHECK(p.data()[14] == 2.0f);
  CHECK(p.data()[15] == 0.0f); // pa's padding untouched
  CHECK(p.data()[32] == -1.0f);
  CHECK(p.data()[64 + 16] == 16.0f);
  CHECK(p.data()[64 + 17] == 0.0f);
  // a group is its run of the buffer, the members' padding inside it
  const auto g0 = p.group<0>(), g2 = p.group<2>();
  CHECK(g0.data() == p.data());
  CHECK(g0.size() == 32);
  CHECK(g2.data() == p.data() + 48);
  CHECK(g2.size() == 48);
  // the const view reads the same place
  const L& cp = p;
  const auto ce = cp.get<pe_>();
  STATIC_REQUIRE(std::is_same_v<decltype(ce), const TensorMap<const float, shape<17>>>);
  CHECK(ce(3) == 3.0f);
  // moving keeps the buffer (and so maps taken before the move)
  L q = std::move(p);
  CHECK(q.data()[14] == 2.0f);
  CHECK(a(4, 2) == 2.0f);
}

// README.md's example (docs:readme_packed checks that the lines between readme:packed:begin and
// readme:packed:end are the README's), with a world of one for its communicator.
TEST_CASE("README: gradient buckets as a packed layout", "[core][packed][readme]") {
  dist::single_process comm;
// readme:packed:begin
using grads = packed<float,
    group<member<shape<128, 10>, struct w2_>, member<shape<10>, struct b2_>>,    // bucket 0: ready first
    group<member<shape<784, 128>, struct w1_>, member<shape<128>, struct b1_>>>; // bucket 1
grads g;
TensorMap<float, shape<128, 10>> dw2 = g.get<w2_>(); // a member, written by the backward pass
auto first = comm.allreduce_start(g.group<0>());     // its group's run: no copy
// readme:packed:end
  comm.wait(first);
  dw2 = full<float, shape<128, 10>>(1.0f);
  CHECK(g.group<0>().size() == 1280 + 16);
  CHECK(g.group<0>()[1279] == 1.0f);
  CHECK(g.group<1>().data() == g.data() + 1296);
  CHECK(grads::size == 1296 + 784 * 128 + 128);
}
