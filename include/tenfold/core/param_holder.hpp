#pragma once
// The storage of a parameter that reverse mode differentiates with respect to (autodiff/backward.hpp):
// a plain pointer whose type names the parameter (Tag: the function being differentiated, K: its
// position) and the memory it lies in (Memory: the holder the parameter's own leaf has, void for host
// memory; a backend recognises its own, as the CUDA evaluator does its device_holder).
#include "tenfold/core/config.hpp"

namespace tenfold::autodiff {
template <class T, class Tag, int K, class Memory = void>
struct param_holder {
  T* ptr = nullptr;
  TENFOLD_HD T* data() const { return ptr; }
};
} // namespace tenfold::autodiff
