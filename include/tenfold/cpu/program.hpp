#pragma once
// program<Model, Inputs...>: a model's forward pass, run on the CPU with every activation at its
// planned offset in one arena — static storage or a buffer of the caller's, or one block allocated
// when the program is made. Running it allocates nothing.
#include <memory>
#include <new>
#include <span>

#include "tenfold/core/buffer.hpp"
#include "tenfold/cpu/evaluator.hpp"
#include "tenfold/cpu/step.hpp"
#include "tenfold/plan/program.hpp"
#include "tenfold/core/unpack.hpp"

namespace tenfold {

template <class Model, class... Inputs>
class program {
 public:
  using plan = program_plan<Model, Inputs...>; // sizes and offsets, all compile-time
  using output_type = typename plan::output_type;
  static constexpr index_t arena_bytes = plan::arena_bytes;

  // The arena is allocated here, once.
  explicit program(Model& m) : model_(&m) {
    if constexpr (arena_bytes > 0)
      owned_.reset(static_cast<std::byte*>(detail::allocate_buffer(arena_bytes, tenfold::plan::arena_alignment)));
    arena_ = owned_.get();
  }
  // The arena is the caller's (static storage, a pool): it must hold arena_bytes, 64-byte aligned.
  program(Model& m, std::span<std::byte> arena) : model_(&m), arena_(arena.data()) {
    if (index_t(arena.size()) < arena_bytes)
      throw error(
          detail::message("tenfold::program: the arena has ", arena.size(), " bytes; this model needs ", arena_bytes));
    if (reinterpret_cast<std::uintptr_t>(arena.data()) % tenfold::plan::arena_alignment != 0)
      throw error("tenfold::program: the arena must be 64-byte aligned");
  }

  // One forward pass: state updates in order, then the result into `out` (the plan's step).
  void operator()(output_type& out, const Inputs&... in) {
    run_step(detail::forward_statements(out, model_->forward(in...)), std::span<std::byte>(arena_, std::size_t(arena_bytes)));
  }
  output_type operator()(const Inputs&... in) {
    output_type out;
    (*this)(out, in...);
    return out;
  }

 private:
  struct aligned_delete {
    void operator()(std::byte* p) const { detail::free_buffer(p, arena_bytes, tenfold::plan::arena_alignment); }
  };
  Model* model_;
  std::unique_ptr<std::byte[], aligned_delete> owned_;
  std::byte* arena_ = nullptr;
};
} // namespace tenfold
