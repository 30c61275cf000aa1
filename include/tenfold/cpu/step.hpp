#pragma once
// run_step(statements, arena): a step (core/step.hpp) on the CPU, each slot and temporary at its planned
// place in the caller's arena (step_plan<decltype(statements)>::bytes, 64-byte aligned). Nothing is
// allocated. run_step(statements, arena, on_buckets<T, MinBytes>(f)) also calls f(k, std::span<T>) with
// each bucket of the kept slots (step_plan's buckets<MinBytes>) right after the statement that completes
// it, in order, while the statements after it have not run.
#include <cstring>
#include <span>

#include "tenfold/core/tensor_map.hpp"
#include "tenfold/cpu/evaluator.hpp"
#include "tenfold/cpu/together.hpp"
#include "tenfold/plan/step.hpp"

namespace tenfold {
namespace cpu {
// The CPU backend of the step walk: arena_buffers for the temporaries, plus the slots' places.
struct step_buffers : arena_buffers {
  const plan::step_places* places;
  // the buckets to hand over as statements finish them (none: no call)
  const plan::bucket_list* buckets = nullptr;
  void* hook = nullptr;
  void (*fire)(void*, int, std::byte*, std::byte*) = nullptr;
  int statement = 0, next_bucket = 0;
  explicit step_buffers(std::byte* b, const plan::step_places& p) : arena_buffers(b, p.offsets, p.temporaries), places(&p) {}

  void statement_done() {
    if (buckets != nullptr)
      for (; next_bucket < buckets->count && buckets->after[next_bucket] == statement; ++next_bucket)
        fire(hook, next_bucket, base + buckets->begin[next_bucket], base + buckets->end[next_bucket]);
    ++statement;
  }

  // A leaf over a slot reads the slot's place in the arena; any other leaf is read as it is.
  template <class L>
  auto leaf(L&& l) const {
    using D = std::remove_cvref_t<L>;
    using R = detail::slot_read_t<D>;
    if constexpr (std::is_void_v<R>) return D(std::forward<L>(l));
    else {
      using T = typename D::element_type;
      T* p = reinterpret_cast<T*>(base + places->slot_offset(plan::slot_key<typename plan::slot_tag<R>::type>()));
      return detail::leaf<T, typename D::shape_type, D::strides, D::offset, detail::ref_holder<T>>{{}, {p}};
    }
  }
  template <class Dst, class E>
  void assign(const Dst& dst, E&& e) {
    static_assert(!(detail::any_node<detail::is_take, std::remove_cvref_t<E>>() && detail::any_node<reads_slot, std::remove_cvref_t<E>>()),
                  "tenfold::statements: a take or gather reads its indices from a slot (check them first: keep indices in a tensor)");
    detail::eval_with(leaf(dst), std::forward<E>(e), *this);
  }
  template <class T>
  void together(const T& t) {
    detail::unpack([&](const auto&... s) { run_together(prepared(s)...); }, t.args);
  }
  template <class H>
  void host(const H& h) {
    detail::unpack([&](const auto&... x) { h.f(as_map(leaf(x))...); }, h.args);
  }

 private:
  // (a reduction's root reshape peeled first, as assign and the planner's together peel it)
  template <class A>
  auto prepared(const A& s) {
    static_assert(detail::check_assignment<typename decltype(leaf(detail::get<0>(s.args)))::value_type,
                                           typename std::remove_cvref_t<decltype(detail::get<1>(s.args))>::value_type>::ok);
    if constexpr (detail::is_reduction_tree<std::remove_cvref_t<decltype(detail::get<1>(s.args))>>()) {
      auto p = plan::peel_reshape(leaf(detail::get<0>(s.args)), detail::get<1>(s.args));
      auto v = plan::prepare_root(std::move(p.root), *this);
      return prepared_assign<decltype(p.dst), decltype(v)>{p.dst, v};
    } else {
      auto d = leaf(detail::get<0>(s.args));
      auto v = plan::prepare_root(detail::get<1>(s.args), *this);
      return prepared_assign<decltype(d), decltype(v)>{d, v};
    }
  }
  template <class N>
  struct reads_slot : std::bool_constant<!std::is_void_v<detail::slot_read_t<N>>> {};
  template <class L>
  static auto as_map(const L& l) {
    static_assert(L::contiguous, "tenfold::host: an argument must be contiguous (a whole slot, Tensor or TensorMap)");
    return TensorMap<typename L::element_type, typename L::shape_type>(l.data());
  }
};
} // namespace cpu

// f(k, std::span<T> bucket) for each bucket of at least MinBytes of a step's kept slots (of type T).
template <class T, index_t MinBytes, class F>
struct bucket_hook {
  F f;
};
template <class T, index_t MinBytes, class F>
bucket_hook<T, MinBytes, std::remove_cvref_t<F>> on_buckets(F&& f) {
  static_assert(MinBytes > 0, "tenfold::on_buckets: a bucket's size must be positive");
  return {std::forward<F>(f)};
}

template <class S>
void run_step(S&& statements, std::span<std::byte> arena);
// Runs together(...) outside a step: its values need no arena (elementwise, reductions of elementwise
// values, or epilogues of a product of tensors).
template <class... S>
void eval(const detail::together_node<S...>& t) {
  static_assert(step_plan<detail::together_node<S...>>::bytes == 0,
                "tenfold::eval(together(...)): a value needs a temporary (a product of an expression: assign the product's "
                "operands to tensors first, or run the group in a step, run_step, with an arena)");
  run_step(t, {});
}

// Runs the statements in order, in `arena`; a tenfold::error (and nothing run) if the arena is smaller
// than the step's plan or not 64-byte aligned.
namespace cpu {
template <class P>
step_buffers prepare_step(std::span<std::byte> arena) {
  if (index_t(arena.size()) < P::bytes)
    throw error(detail::message("tenfold::run_step: the arena has ", arena.size(), " bytes; this step needs ", P::bytes));
  if (reinterpret_cast<std::uintptr_t>(arena.data()) % plan::arena_alignment != 0)
    throw error("tenfold::run_step: the arena must be 64-byte aligned");
  const plan::kept_layout& k = P::analysis.kept; // the kept slots' padding: zeros, for a bucket's collective
  for (int i = 0; i < k.count; ++i)
    std::memset(arena.data() + k.offset[i] + k.exact[i], 0, std::size_t(k.bytes[i] - k.exact[i]));
  return step_buffers(arena.data(), P::places);
}
} // namespace cpu

template <class S>
void run_step(S&& statements, std::span<std::byte> arena) {
  cpu::step_buffers be = cpu::prepare_step<step_plan<std::remove_cvref_t<S>>>(arena);
  plan::run_statements(std::forward<S>(statements), be);
}
// The same, handing each bucket of the kept slots to hook.f as soon as a statement completes it.
template <class S, class T, index_t MinBytes, class F>
void run_step(S&& statements, std::span<std::byte> arena, bucket_hook<T, MinBytes, F>& hook) {
  using P = step_plan<std::remove_cvref_t<S>>;
  static_assert(P::analysis.kept.count > 0, "tenfold::run_step: buckets given, but the step has no kept slots");
  static_assert(P::analysis.kept.type == plan::slot_key<T>(),
                "tenfold::on_buckets: T must be the kept slots' element type");
  cpu::step_buffers be = cpu::prepare_step<P>(arena);
  be.buckets = &P::template buckets<MinBytes>, be.hook = &hook.f;
  be.fire = [](void* f, int k, std::byte* b, std::byte* e) {
    (*static_cast<F*>(f))(k, std::span<T>(reinterpret_cast<T*>(b), std::size_t(e - b) / sizeof(T)));
  };
  plan::run_statements(std::forward<S>(statements), be);
}
template <class S, class T, index_t MinBytes, class F>
void run_step(S&& statements, std::span<std::byte> arena, bucket_hook<T, MinBytes, F>&& hook) {
  run_step(std::forward<S>(statements), arena, hook);
}
} // namespace tenfold
