// Eigen interop: zero-copy row-major Map views of an Array, and Arrays from Eigen objects
// (a moved-in row-major matrix is adopted without copying; anything else is copied).
#pragma once

#include <memory>
#include <type_traits>

#include <Eigen/Core>

#include "canopy/array.hpp"
#include "canopy/error.hpp"

namespace canopy {

/// Row-major matrix type for element type T.
template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A read-only row-major view of a 1-D or 2-D Array (valid while the Array lives).
/// 1-D arrays view as one row. TypeError if T is not the dtype; ShapeError for rank > 2.
template <class T>
Eigen::Map<const RowMatrix<T>> to_eigen(const Array& a) {
  if (a.ndim() > 2)
    detail::raise<ShapeError>("to_eigen", "array", to_string(a.aval()), "has rank > 2", "reshape it to a matrix first");
  const T* p = a.data<T>();
  Eigen::Index rows = a.ndim() == 2 ? a.shape()[0] : 1, cols = a.ndim() == 0 ? 1 : a.shape().back();
  return Eigen::Map<const RowMatrix<T>>(p, rows, cols);
}

/// An Array (rows x cols) from an Eigen expression; copies, in row-major order.
template <class Derived>
Array from_eigen(const Eigen::DenseBase<Derived>& m) {
  using T = typename Derived::Scalar;
  RowMatrix<T> rm = m;
  return array_from_data(rm.data(), dtype_of<T>(), Shape{rm.rows(), rm.cols()});
}

/// Zero-copy: adopts a moved-in row-major matrix's storage.
template <class T>
Array from_eigen(RowMatrix<T>&& m) {
  auto owner = std::make_shared<RowMatrix<T>>(std::move(m));
  return detail::adopt_buffer(owner->data(), dtype_of<T>(), Shape{owner->rows(), owner->cols()}, owner);
}

}  // namespace canopy
