#pragma once
// The decoder's loss curve as a PNG: the training loss per iteration (its mean over each run of `every`
// iterations) and the validation losses measured, against the iteration.
#include <string>
#include <utility>
#include <vector>

namespace gpt {
// false where the PNG could not be written
bool plot_loss(const std::string& path, const std::vector<double>& train, const std::vector<std::pair<long, double>>& validation,
               long every = 20);
} // namespace gpt
