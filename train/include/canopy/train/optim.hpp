// optax in C++ (namespace canopy::optim): gradient transformations, their composition, the
// aliases sgd/adam/adamw/rmsprop, and the learning-rate schedules.
#pragma once

#include "canopy/train/optim/alias.hpp"
#include "canopy/train/optim/base.hpp"
#include "canopy/train/optim/schedules.hpp"
#include "canopy/train/optim/transform.hpp"
