// canopy::Array: an immutable, shared value handle (aval + device + buffer or tracer), its
// creation from C++ data, element access and the arithmetic operators. No Boost/oneDNN/Eigen here.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "canopy/core/aval.hpp"
#include "canopy/device.hpp"
#include "canopy/dtype.hpp"
#include "canopy/shape.hpp"

namespace canopy {

class Array;
class AtIndexer;  // numpy.hpp
class Index;      // numpy.hpp
/// The outputs of a primitive, the inputs of a rule.
using Arrays = std::vector<Array>;

namespace detail {
struct ArrayImpl;
class TracerImpl;
}  // namespace detail

/// An n-dimensional array. Copies share the value; nothing mutates it after creation.
class Array {
 public:
  /// An empty handle (`valid() == false`): rules use it for "no value" (e.g. an undefined primal).
  Array() = default;
  /// Wraps an implementation (used by traces and creation functions).
  explicit Array(std::shared_ptr<detail::ArrayImpl> impl) : impl_(std::move(impl)) {}

  /// Whether this handle holds a value.
  bool valid() const { return impl_ != nullptr; }
  /// dtype + shape + weak_type.
  const Aval& aval() const;
  DType dtype() const { return aval().dtype; }
  const Shape& shape() const { return aval().shape; }
  /// Size of dimension `axis` (negative counts from the end).
  std::int64_t shape(int axis) const;
  std::size_t ndim() const { return aval().shape.size(); }
  std::int64_t size() const { return shape_size(aval().shape); }
  bool weak_type() const { return aval().weak_type; }
  Device device() const;
  /// Whether this array's buffer was donated to a jitted call (donate_argnums) and is gone.
  bool is_deleted() const;
  /// Whether this is a tracer of some transformation rather than a concrete value.
  bool is_tracer() const;
  /// The tracer (null for concrete arrays): the hook transformations hang their state on.
  detail::TracerImpl* tracer() const;

  /// The single element converted to T; throws ShapeError unless size() == 1.
  template <class T>
  T item() const {
    check_item("item");
    T v{};
    copy_as(dtype_of<T>(), &v);
    return v;
  }
  /// All elements, row-major, converted to T.
  template <class T>
  std::vector<T> to_vector() const {
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<std::uint8_t> tmp(static_cast<std::size_t>(size()));
      copy_as(DType::bool_, tmp.data());
      return std::vector<bool>(tmp.begin(), tmp.end());
    } else {
      std::vector<T> v(static_cast<std::size_t>(size()));
      copy_as(dtype_of<T>(), v.data());
      return v;
    }
  }
  /// Pointer to the row-major elements of a concrete array of dtype T; throws TypeError otherwise.
  template <class T>
  const T* data() const {
    return static_cast<const T*>(typed_data(dtype_of<T>()));
  }
  /// Untyped pointer to the elements of a concrete array.
  const void* raw_data() const;

  /// Converts to another dtype (jnp `astype`).
  Array astype(DType d) const;
  /// Same elements, new shape; one dimension may be -1.
  Array reshape(const Shape& s) const;
  /// Reverses the axes (numpy `.T`).
  Array T() const;
  /// Functional indexed access along the leading axes, jnp's `x.at[idx]`: `x.at(i).set(v)`,
  /// `x.at({i, j}).add(v)`, `x.at(2).get()`. AtIndexer is defined in numpy.hpp.
  AtIndexer at(const Array& index) const;
  AtIndexer at(std::vector<Array> indices) const;
  AtIndexer at(std::int64_t index) const;
  AtIndexer at(std::initializer_list<std::int64_t> indices) const;
  /// numpy-style indexing, jnp's `x[...]` (numpy.hpp): `x[2]`, `x[{0, slice(1, none)}]`,
  /// `x[{ellipsis, newaxis}]`, `x[{idx_array, slice(none, none, -1)}]`.
  Array operator[](const Index& index) const;
  Array operator[](std::initializer_list<Index> index) const;

  /// The shared implementation (for traces and kernels).
  const std::shared_ptr<detail::ArrayImpl>& impl() const { return impl_; }

 private:
  void check_item(const char* api) const;
  void copy_as(DType d, void* dst) const;
  const void* typed_data(DType d) const;
  std::shared_ptr<detail::ArrayImpl> impl_;
};

/// Array from raw row-major elements of dtype `d` (copied), on `dev` (default_device() if none;
/// uncommitted either way: device_put commits).
Array array_from_data(const void* data, DType d, const Shape& shape, std::optional<Device> dev = std::nullopt);
namespace detail {
/// Throws the "ragged nested list" ShapeError (kept out of line).
[[noreturn]] void raise_ragged(const char* api);
/// array(vector, shape) after the size check.
Array array_from_vector_checked(const void* data, DType d, std::size_t n, const Shape& shape);
}  // namespace detail

/// 1-D array from a braced list; C++ types map as float->f32, double->f64, int->i32, unsigned->u32,
/// bool->bool.
template <class T>
Array array(std::initializer_list<T> v) {
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no contiguous data()
    std::vector<std::uint8_t> d(v.begin(), v.end());
    return array_from_data(d.data(), DType::bool_, Shape{static_cast<std::int64_t>(d.size())});
  } else {
    using U = std::conditional_t<std::is_same_v<T, int>, std::int32_t, std::conditional_t<std::is_same_v<T, unsigned>, std::uint32_t, T>>;
    std::vector<U> d(v.begin(), v.end());
    return array_from_data(d.data(), dtype_of<U>(), Shape{static_cast<std::int64_t>(d.size())});
  }
}
/// 2-D array from nested braced lists (rows must have equal length; ShapeError otherwise).
template <class T>
Array array(std::initializer_list<std::initializer_list<T>> rows) {
  using U = std::conditional_t<std::is_same_v<T, int>, std::int32_t, std::conditional_t<std::is_same_v<T, unsigned>, std::uint32_t, T>>;
  std::vector<U> d;
  std::int64_t cols = rows.size() ? static_cast<std::int64_t>(rows.begin()->size()) : 0;
  for (auto& r : rows) {
    if (static_cast<std::int64_t>(r.size()) != cols) detail::raise_ragged("array");
    d.insert(d.end(), r.begin(), r.end());
  }
  return array_from_data(d.data(), dtype_of<U>(), Shape{static_cast<std::int64_t>(rows.size()), cols});
}
/// Array of the given shape from a std::vector of elements (ShapeError if the sizes differ).
template <class T>
Array array(const std::vector<T>& v, const Shape& shape) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<std::uint8_t> b(v.begin(), v.end());
    return detail::array_from_vector_checked(b.data(), DType::bool_, b.size(), shape);
  } else {
    return detail::array_from_vector_checked(v.data(), dtype_of<T>(), v.size(), shape);
  }
}
/// A strongly typed 0-d array holding `v` in T's dtype (int is i32, unsigned u32); weak_scalar
/// gives JAX's Python-scalar semantics instead.
template <class T>
  requires std::is_arithmetic_v<T>
Array scalar(T v) {
  using U = std::conditional_t<std::is_same_v<T, int>, std::int32_t, std::conditional_t<std::is_same_v<T, unsigned>, std::uint32_t, T>>;
  U u = static_cast<U>(v);
  return array_from_data(&u, dtype_of<U>(), Shape{});
}

namespace detail {
/// Wraps external memory kept alive by `owner` as an Array (zero-copy; e.g. from_eigen).
Array adopt_buffer(void* data, DType d, const Shape& shape, std::shared_ptr<void> owner);
/// A weakly typed scalar (JAX's Python-scalar semantics): defers to the other operand's dtype.
/// Floats are stored in f64 and ints in i32 (i64 beyond i32's range) so no precision is lost
/// before promotion.
Array weak_scalar(double v);
Array weak_scalar(std::int64_t v);
template <class T>
Array weak_scalar_of(T v) {
  if constexpr (std::is_same_v<T, bool>) return scalar(v);
  else if constexpr (std::is_floating_point_v<T>) return weak_scalar(static_cast<double>(v));
  else return weak_scalar(static_cast<std::int64_t>(v));
}
}  // namespace detail

/// Prints as JAX's repr: `Array([1., 2.], dtype=float32)`, `Array(3, dtype=int32, weak_type=True)`,
/// `Array([], shape=(0, 2), dtype=float32)`; the values laid out by numpy's rules (float digits
/// that identify the value in its dtype, at most PrintOptions::precision of them after the point,
/// scientific when magnitudes are < 1e-4, >= 1e8 or span more than 1e3; lines wrapped at
/// `linewidth`; "..." beyond `threshold` elements). A tracer prints as `Traced<f32[3]>`.
std::ostream& operator<<(std::ostream& os, const Array& a);

/// numpy's print options that JAX's repr follows (np.set_printoptions).
struct PrintOptions {
  int precision = 8;              ///< most digits after the point; -1: as many as identify the value
  std::int64_t threshold = 1000;  ///< more elements than this are summarised
  std::int64_t edgeitems = 3;     ///< elements shown at each end of a summarised axis
  int linewidth = 75;             ///< characters per line
};
/// The current options (process-wide; thread-safe).
PrintOptions print_options();
/// Replaces the options, e.g. `set_print_options({.precision = -1})` for full precision.
void set_print_options(const PrintOptions& options);

// Operators follow jax.numpy broadcasting and promotion; C++ scalars are weakly typed.
Array operator-(const Array& x);
Array operator!(const Array& x);
Array operator+(const Array& a, const Array& b);
Array operator-(const Array& a, const Array& b);
Array operator*(const Array& a, const Array& b);
Array operator/(const Array& a, const Array& b);
Array operator%(const Array& a, const Array& b);
Array operator==(const Array& a, const Array& b);
Array operator!=(const Array& a, const Array& b);
Array operator<(const Array& a, const Array& b);
Array operator<=(const Array& a, const Array& b);
Array operator>(const Array& a, const Array& b);
Array operator>=(const Array& a, const Array& b);
Array operator&&(const Array& a, const Array& b);
Array operator||(const Array& a, const Array& b);
// Bitwise on integers, logical on bool (numpy's &, |, ^, ~); TypeError on floats.
Array operator~(const Array& x);
Array operator&(const Array& a, const Array& b);
Array operator|(const Array& a, const Array& b);
Array operator^(const Array& a, const Array& b);

#define CANOPY_SCALAR_OPERATOR(op)                                                                  \
  template <class S>                                                                                \
    requires std::is_arithmetic_v<S>                                                                \
  Array operator op(const Array& a, S s) { return a op detail::weak_scalar_of(s); }               \
  template <class S>                                                                                \
    requires std::is_arithmetic_v<S>                                                                \
  Array operator op(S s, const Array& a) { return detail::weak_scalar_of(s) op a; }
CANOPY_SCALAR_OPERATOR(+)
CANOPY_SCALAR_OPERATOR(-)
CANOPY_SCALAR_OPERATOR(*)
CANOPY_SCALAR_OPERATOR(/)
CANOPY_SCALAR_OPERATOR(%)
CANOPY_SCALAR_OPERATOR(==)
CANOPY_SCALAR_OPERATOR(!=)
CANOPY_SCALAR_OPERATOR(<)
CANOPY_SCALAR_OPERATOR(<=)
CANOPY_SCALAR_OPERATOR(>)
CANOPY_SCALAR_OPERATOR(>=)
CANOPY_SCALAR_OPERATOR(&)
CANOPY_SCALAR_OPERATOR(|)
CANOPY_SCALAR_OPERATOR(^)
#undef CANOPY_SCALAR_OPERATOR

}  // namespace canopy
