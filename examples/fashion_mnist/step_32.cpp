// trainer<32>::run: a rank's shard of the batch, under MPI (steps.hpp).
#include "steps.hpp"

namespace fashion {
#ifdef FASHION_MNIST_MPI
template FASHION_MNIST_STEP(32);
#endif
} // namespace fashion
