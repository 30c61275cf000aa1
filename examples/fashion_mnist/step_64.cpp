// trainer<64>::run: the whole batch in one process (steps.hpp).
#include "steps.hpp"

namespace fashion {
template FASHION_MNIST_STEP(64);
}
