// canopy pytrees: tree_map, tree_flatten, key paths and treedefs over ordinary C++ values.
// Header-only; needs only the standard library and Boost (PFR, Hana).
#pragma once

#include "canopy/error.hpp"
#include "canopy/pytree/eigen.hpp"
#include "canopy/pytree/flatten.hpp"
#include "canopy/pytree/hana.hpp"
#include "canopy/pytree/key_path.hpp"
#include "canopy/pytree/map.hpp"
#include "canopy/pytree/pfr.hpp"
#include "canopy/pytree/std.hpp"
#include "canopy/pytree/transpose.hpp"
#include "canopy/pytree/traits.hpp"
#include "canopy/pytree/treedef.hpp"
#include "canopy/pytree/user.hpp"
