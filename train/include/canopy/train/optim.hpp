// optax in C++ (namespace canopy::optim): gradient transformations, their composition, the
// aliases sgd/adam/adamw/rmsprop, the learning-rate schedules and the losses.
#pragma once

#include "canopy/train/optim/alias.hpp"
#include "canopy/train/optim/base.hpp"
#include "canopy/train/optim/losses.hpp"
#include "canopy/train/optim/schedules.hpp"
#include "canopy/train/optim/transform.hpp"
