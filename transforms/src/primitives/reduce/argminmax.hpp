// Internal to argmax.cpp, argmin.cpp and the backends: the params and shape rule of lax.argmax/argmin.
// Ties go to the smallest index; a NaN beats every number and the first NaN wins (XLA's
// comparator, so jnp.argmax/argmin agree with numpy on NaN).
#pragma once

#include <cmath>

#include "../common.hpp"

namespace canopy::detail {

/// Params of both primitives: one axis, and the dtype of the indices (any integer dtype).
struct ArgParams {
  int axis = 0;
  DType index_dtype = DType::i32;
};

inline Aval arg_aval(std::string_view prim, const Aval& a, const ArgParams& p) {
  expect_kind(prim, a, kAll);
  if (!is_integer(p.index_dtype))
    raise<TypeError>(prim, "index_dtype", "", concat(p.index_dtype, " is not an integer dtype"));
  const int ax = normalize_axis(prim, p.axis, a.ndim(), a);
  if (a.shape[static_cast<std::size_t>(ax)] == 0)
    raise<ShapeError>(prim, "axis", std::to_string(p.axis), concat("of ", to_string(a), " is empty"),
                      "an empty sequence has no arg-extremum");
  Aval out{p.index_dtype, {}, false};
  for (std::size_t i = 0; i < a.ndim(); ++i)
    if (static_cast<int>(i) != ax) out.shape.push_back(a.shape[i]);
  return out;
}

template <class Params>
std::vector<Sample<Params>> arg_samples() {
  std::vector<Sample<Params>> s;
  std::uint64_t seed = 31;
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::bool_}) {
    s.push_back({{sample_array(d, {3, 4}, -3, 3, seed++)}, {1, DType::i32}, "last axis"});
    s.push_back({{sample_array(d, {3, 4}, -3, 3, seed++)}, {0, DType::u32}, "first axis, u32 indices"});
    s.push_back({{sample_array(d, {2, 0, 3}, -3, 3, seed++)}, {-1, DType::i32}, "empty other dim"});
    s.push_back({{sample_array(d, {5}, -3, 3, seed++)}, {0, DType::i32}, "to a scalar"});
  }
  // Operands and index dtypes of other widths.
  s.push_back({{sample_array(DType::u8, {3, 4}, 0, 9, seed++)}, {1, DType::i64}, "u8, i64 indices"});
  s.push_back({{sample_array(DType::f16, {3, 4}, -3, 3, seed++)}, {0, DType::u8}, "f16, u8 indices"});
  return s;
}

}  // namespace canopy::detail
