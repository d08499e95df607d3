// The umbrella header: pytrees, Array, the ops and the jax.numpy layer.
#pragma once

#include "canopy/array.hpp"
#include "canopy/array_pytree.hpp"
#include "canopy/device.hpp"
#include "canopy/dtype.hpp"
#include "canopy/error.hpp"
#include "canopy/numpy.hpp"
#include "canopy/nn.hpp"
#include "canopy/ops.hpp"
#include "canopy/pytree.hpp"
#include "canopy/shape.hpp"
