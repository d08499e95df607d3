// Internal to the random_* primitives and the backends: the shape rule of a key array (u32[..., 2],
// JAX's raw threefry keys) and the primitives' Params.
#pragma once

#include <canopy/kernels/cpu_random.hpp>

#include "../common.hpp"

namespace canopy::detail {

/// random_bits: the sample shape per key, the key layout, the bits' dtype (u8..u64).
struct RandomBitsParams {
  Shape shape;
  random::Layout layout = random::default_layout;
  DType dtype = DType::u32;
};
/// random_split: the shape of new keys per key, the key layout.
struct RandomSplitParams {
  Shape shape;
  random::Layout layout = random::default_layout;
};
/// An Eqn's params for random_fold_in (for jit's passes).
std::shared_ptr<const void> random_fold_in_params();
/// random_uniform01: the sample shape per key, the float dtype, the key layout.
struct RandomUniform01Params {
  Shape shape;
  DType dtype = DType::f32;
  random::Layout layout = random::default_layout;
};

/// TypeError/ShapeError unless `k` is u32[..., 2]; returns the batch shape (all but the last dim).
inline Shape key_batch_shape(std::string_view prim, const Aval& k, int arg = 0) {
  if (k.dtype != DType::u32)
    raise<TypeError>(prim, "key", "argument " + std::to_string(arg), concat(to_string(k), " must have dtype u32"),
                     "keys are u32[..., 2] arrays from random::key or PRNGKey");
  if (k.ndim() == 0 || k.shape.back() != 2)
    raise<ShapeError>(prim, "key", "argument " + std::to_string(arg), concat(to_string(k), " must have a last dimension of 2"),
                      "keys are u32[..., 2] arrays from random::key or PRNGKey");
  return Shape(std::span<const std::int64_t>(k.shape.data(), k.ndim() - 1));
}

/// `a` followed by `b`.
inline Shape joined(const Shape& a, const Shape& b) {
  Shape r = a;
  for (auto d : b) r.push_back(d);
  return r;
}

/// Sample keys for the registry tests: one key, and a batch of three.
inline Array sample_keys(const Shape& batch, std::uint32_t seed) {
  std::vector<std::uint32_t> w;
  for (std::int64_t i = 0; i < 2 * shape_size(batch); ++i) w.push_back(seed * 7919u + static_cast<std::uint32_t>(i));
  return array(w, joined(batch, {2}));
}

/// Shape check of the params' sample shape (no negative dims, an element count int64 holds).
inline void expect_shape(std::string_view prim, const Shape& s) { checked_size(prim, s); }

}  // namespace canopy::detail
