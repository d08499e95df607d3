// Internal to random/src: the key-level primitive binders (defined with their primitives in
// transforms/src/primitives/random/) and the checks every sampler shares.
#pragma once

#include <string_view>

#include <canopy/numpy.hpp>
#include <canopy/random.hpp>

namespace canopy::detail {
Array random_split_p(const Array& keys, const Shape& shape, random::Layout layout);
Array random_fold_in_p(const Array& keys, const Array& data);
Array random_bits_p(const Array& keys, const Shape& shape, random::Layout layout, DType dtype);
Array random_uniform01_p(const Array& keys, const Shape& shape, DType dtype, random::Layout layout);
}  // namespace canopy::detail

namespace canopy::random::detail {

/// TypeError/ShapeError unless `key` is a key array u32[..., 2]; `single` also requires u32[2].
void check_key(std::string_view api, const Array& key, bool single);
/// TypeError unless `dtype` is f32 or f64.
void check_float_dtype(std::string_view api, DType dtype);
/// ShapeError if a dimension is negative or the element count does not fit in int64.
void check_shape(std::string_view api, const Shape& shape);
/// `axis` in [-rank, rank) made non-negative; ShapeError naming `api` otherwise.
int axis_of(std::string_view api, int axis, const Array& x);
/// Row i of x along the leading axis (the leading dim dropped).
Array row(const Array& x, std::int64_t i);
/// A strongly typed 0-d array of `dtype` holding v (rounded once to dtype, as np.array(v, dtype)).
Array constant(double v, DType dtype);

}  // namespace canopy::random::detail
