// TEMPORARY: renamed cpu_runtime.hpp (a CPU-only header); this forwards the old name until its users are renamed.
#pragma once

#include "canopy/kernels/cpu_runtime.hpp"
