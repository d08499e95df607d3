// The umbrella header, the whole library: pytrees, Array, the ops, jax.numpy and jax.nn, the
// transformations (grad, vmap, jit, control flow, custom rules), canopy::random and canopy::profiler.
// It gathers every layer of the library, so it lives in the top one (random/).
#pragma once

#include "canopy/array.hpp"
#include "canopy/array_pytree.hpp"
#include "canopy/device.hpp"
#include "canopy/devices.hpp"
#include "canopy/dtype.hpp"
#include "canopy/error.hpp"
#include "canopy/matmul_precision.hpp"
#include "canopy/numpy.hpp"
#include "canopy/nn.hpp"
#include "canopy/nn/dropout.hpp"
#include "canopy/nn/initializers.hpp"
#include "canopy/ops.hpp"
#include "canopy/profiler.hpp"
#include "canopy/pytree.hpp"
#include "canopy/random.hpp"
#include "canopy/shape.hpp"
#include "canopy/transforms.hpp"
#include "canopy/x64.hpp"
