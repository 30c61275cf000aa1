// trainer<32>::run and ::step: a rank's shard of the batch, under MPI (steps.hpp).
#include "steps.hpp"

namespace fashion {
#ifdef FASHION_MNIST_MPI
template FASHION_MNIST_STEP(32);
template FASHION_MNIST_ADAM(32);
template FASHION_MNIST_ZERO1(32);
#endif
} // namespace fashion
