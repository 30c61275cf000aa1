#pragma once
// A PNG chart of the training curves: train loss (left axis) and test accuracy (right axis) per epoch,
// drawn on examples/common/canvas.hpp.
#include <string>
#include <vector>

#include "../common/canvas.hpp"

namespace fashion {

using examples::canvas;

// Loss and accuracy per epoch (index 0 = epoch 1) into `path`; returns false where the PNG could not
// be written.
bool plot_curves(const std::string& path, const std::vector<double>& loss, const std::vector<double>& accuracy);
} // namespace fashion
