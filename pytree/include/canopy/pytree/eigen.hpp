// Eigen's dense matrices and arrays are pytree leaves: a matrix is one leaf, as an array is in JAX.
// Eigen's templates are only declared here, so the pytree layer compiles without Eigen installed.
#pragma once

#include <type_traits>

#include "canopy/pytree/traits.hpp"

namespace Eigen {
template <typename Scalar, int Rows, int Cols, int Options, int MaxRows, int MaxCols>
class Matrix;
template <typename Scalar, int Rows, int Cols, int Options, int MaxRows, int MaxCols>
class Array;
}  // namespace Eigen

namespace canopy {
template <class S, int R, int C, int O, int MR, int MC>
struct is_leaf<Eigen::Matrix<S, R, C, O, MR, MC>> : std::true_type {};
template <class S, int R, int C, int O, int MR, int MC>
struct is_leaf<Eigen::Array<S, R, C, O, MR, MC>> : std::true_type {};
}  // namespace canopy
