// The transformations: jvp, vjp, grad, value_and_grad, vmap, jacobians, control flow, custom
// rules, jit, make_jaxpr, pmap and pure_callback.
#pragma once

#include "canopy/array.hpp"
#include "canopy/numpy.hpp"
#include "canopy/transforms/autodiff.hpp"
#include "canopy/transforms/vmap.hpp"
#include "canopy/transforms/jacobian.hpp"
#include "canopy/transforms/control_flow.hpp"
#include "canopy/transforms/custom.hpp"
#include "canopy/transforms/jit.hpp"
#include "canopy/transforms/pmap.hpp"
#include "canopy/transforms/callback.hpp"
