// Prints the op list of the README, generated from the op table (ops/table.hpp): one markdown list
// item per kind, naming every op by its descriptor's `name`. The "docs" CTest compares this output
// with the README section between <!-- ops:begin --> and <!-- ops:end -->; see tools/check_op_list.cmake
// (run with -DUPDATE=ON to rewrite the section instead).
#include <cstdio>
#include <string>

#include "tenfold/ops/table.hpp"

namespace {
template <class List>
void print_kind(const char* kind) {
  std::string names;
  List::for_each([&]<class Op>() {
    if (!names.empty()) names += ", ";
    names += "`" + std::string(Op::name) + "`";
  });
  std::printf("- **%s** (%zu): %s\n", kind, List::size, names.c_str());
}
} // namespace

int main() {
  using namespace tenfold::ops;
  print_kind<unary_ops>("unary");
  print_kind<binary_ops>("binary");
  print_kind<bitwise_ops>("bitwise");
  print_kind<ternary_ops>("ternary");
  print_kind<reduction_ops>("reduction");
}
