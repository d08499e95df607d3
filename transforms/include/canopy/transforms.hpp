// The transformations: jvp, vjp, grad, value_and_grad (and, as they land, vmap, jit, pmap).
#pragma once

#include "canopy/canopy.hpp"
#include "canopy/transforms/autodiff.hpp"
#include "canopy/transforms/vmap.hpp"
#include "canopy/transforms/jacobian.hpp"
#include "canopy/transforms/control_flow.hpp"
#include "canopy/transforms/custom.hpp"
