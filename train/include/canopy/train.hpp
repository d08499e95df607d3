// The training toolbox, whole: optimizers and schedules (canopy::optim), the train state and
// step, checkpoints, periodic actions, metric writers, data, evaluation, progress and plots.
#pragma once

#include "canopy/train/error.hpp"
#include "canopy/train/eval.hpp"
#include "canopy/train/optim.hpp"
#include "canopy/train/state.hpp"
#include "canopy/train/tree_utils.hpp"
#include "canopy/train/serial_executor.hpp"
#include "canopy/train/writers.hpp"
#include "canopy/train/progress.hpp"
#include "canopy/train/plot.hpp"
#include "canopy/train/idx.hpp"
#include "canopy/train/batches.hpp"
#include "canopy/train/device_batches.hpp"
#include "canopy/train/scan_epoch.hpp"
#include "canopy/train/prefetch.hpp"
#include "canopy/train/triggers.hpp"
#include "canopy/train/cron.hpp"
#include "canopy/train/devices.hpp"
#include "canopy/train/checkpoint.hpp"
#include "canopy/train/safetensors.hpp"
