// The simplifications jit applies to a staged Program before running it, each in its own file.
// Every primitive is pure, so an equation may be removed, merged or evaluated early freely.
#pragma once

#include <vector>

#include "canopy/core/ir.hpp"

namespace canopy::detail {

/// Evaluates now every equation whose operands are all concrete constants and whose results
/// are small (static scalars: weak-typed literals converted, shapes of constants), replacing
/// its results by constants.
void fold_constants(Program& p, std::int64_t max_elements = 64);

/// Merges equations that apply the same primitive with equal params to the same operands, and
/// equal scalar literals; later uses read the first result.
void eliminate_common_subexpressions(Program& p);

/// Removes equations none of whose results reach an output, and constants nothing reads.
void eliminate_dead_code(Program& p);

/// Replaces each maximal group of two or more elementwise equations of one output shape (f32
/// and bool values; operands of that shape, scalars or trailing rows; random_uniform01 streams of
/// one key as sources) by one `fused_elementwise`
/// equation that reads every input once and writes only the values read outside the group.
/// The result is for running, not for transformations (fused_elementwise has no jvp or batch rule).
void fuse_elementwise(Program& p);

}  // namespace canopy::detail
