// TEMPORARY: renamed cpu_random.hpp (a CPU-only header); this forwards the old name until its users are renamed.
#pragma once

#include "canopy/kernels/cpu_random.hpp"
