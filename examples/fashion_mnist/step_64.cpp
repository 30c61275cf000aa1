// trainer<64>::run and ::step: the whole batch in one process (steps.hpp).
#include "steps.hpp"

namespace fashion {
template FASHION_MNIST_STEP(64);
template FASHION_MNIST_ADAM(64);
template FASHION_MNIST_ZERO1(64);
}
