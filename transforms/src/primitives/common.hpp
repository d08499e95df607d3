// Internal to transforms/src: the stock pieces primitive files and backends share — dtype/shape
// checks that raise the standard errors, stock elementwise abstract_eval, kernel-level copies,
// sample inputs.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "../core/array_impl.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/cpu.hpp"
#include "canopy/numpy.hpp"
#include "canopy/ops.hpp"

namespace canopy::detail {

/// Dtype kinds a primitive accepts (bit set).
enum Kinds : unsigned { kFloat = 1, kInt = 2, kBool = 4, kAll = 7 };
/// Whether `d` is one of `k`.
bool kind_ok(DType d, unsigned k);
/// Words for a kind set in messages ("floating-point", "integer or boolean", ...).
std::string kinds_text(unsigned k);
/// "[1,2,3]" for messages.
std::string list_text(std::span<const int> v);
std::string list_text(std::span<const std::int64_t> v);
/// TypeError unless a's dtype is in `k`: `<prim>: operand (argument i) f32[3] must be integer or boolean`.
void expect_kind(std::string_view prim, const Aval& a, unsigned k, int arg = 0);
/// Axis in [-rank, rank) made non-negative; ShapeError names `api` otherwise.
int normalize_axis(std::string_view api, int axis, std::size_t rank, const Aval& a);

/// Stock abstract_eval: one input of kind `k`, same aval out (bool out when `bool_out`).
Aval unary_aval(std::string_view prim, std::span<const Aval> avals, unsigned k, bool bool_out = false);
/// Stock abstract_eval: two inputs of one dtype in `k`, numpy-broadcast shapes.
Aval binary_aval(std::string_view prim, std::span<const Aval> avals, unsigned k, bool bool_out = false);
/// The GPU index of an array on cuda:k.
inline int gpu_of(const Array& x) { return x.impl()->device.index; }
/// Runs a device-neutral evaluation (cond, while_loop, scan, jit_call, pure_callback) whose
/// results may come back in another memory than the op's device's (a branch returning a host
/// constant, a callback) and puts those results on the device the op was placed on, as the
/// outputs EvalTrace allocated say. Host results of an op on a CPU device stay as they are.
template <class Kernel>
void keep_results_on_device(std::span<Array> out, Kernel&& kernel) {
  const Device dev = out.empty() ? Device::cpu() : out[0].device();
  const bool committed = !out.empty() && out[0].impl()->committed;
  kernel();
  for (Array& o : out)
    if (in_device_memory(o) || in_device_memory(dev)) o = to_device_memory(o, dev, committed);
}


/// Kernel-level helpers for kernels and `evaluate` bodies: they never dispatch, so a kernel behaves
/// the same whichever trace is current when it runs; they copy on x's device.
/// x with axes permuted (x itself for the identity permutation).
Array permuted_copy(const Array& x, const std::vector<int>& perm);
/// x (scalar or already of `shape`) broadcast to `shape`.
Array broadcast_copy(const Array& x, const Shape& shape);

/// jnp promotion of (dtype, weak) pairs: the least upper bound in JAX's type lattice.
Aval join_types(const Aval& a, const Aval& b);
/// Converts every input to their common dtype (weak scalars defer to strong operands). A C++
/// integer (weak integer scalar) outside the integer dtype it meets is an OverflowError naming `api`.
std::vector<Array> promote(std::vector<Array> xs, std::string_view api);
/// convert_element_type with an explicit weak_type on the result.
Array convert_weak(const Array& x, DType d, bool weak);
/// Integer/bool inputs become the default float, f32 (f64 in x64 mode; weak stays weak), as jnp
/// does for float-only functions.
Array to_float(const Array& x);
/// bool and integers narrower than the default int widened to it (i32, or i64 in x64 mode; u32 or
/// u64 for unsigned ones), as jnp.sum and jnp.prod accumulate them (promote_integers=True).
Array to_accumulating(const Array& x);
/// x as truth values, as jnp's logical functions read it: bool unchanged, else x != 0 (NaN is true).
Array truth(const Array& x);
/// Whether eager evaluation is current (no transformation active) and x is concrete.
bool eager(const Array& x);

/// Deterministic pseudo-random test input (splitmix64), values in [lo, hi).
Array sample_array(DType d, const Shape& s, double lo, double hi, std::uint64_t seed);
/// The dtypes beyond f32/f64/i32/bool that elementwise samples also cover: f16 for floats;
/// u8, i8 and i64 for integers.
inline std::vector<DType> narrow_and_wide_dtypes(unsigned k) {
  std::vector<DType> ds;
  if (k & kFloat) ds.push_back(DType::f16);
  if (k & kInt) ds.insert(ds.end(), {DType::u8, DType::i8, DType::i64});
  return ds;
}
/// Samples for an elementwise unary primitive: shapes [], [0], [1,5], [3,4] per dtype kind, and
/// [3,4] in each narrow_and_wide_dtypes.
template <class Params>
std::vector<Sample<Params>> unary_samples(unsigned k, double lo, double hi, Params p = {}) {
  std::vector<Sample<Params>> out;
  std::vector<DType> ds;
  if (k & kFloat) ds.insert(ds.end(), {DType::f32, DType::f64});
  if (k & kInt) ds.push_back(DType::i32);
  if (k & kBool) ds.push_back(DType::bool_);
  std::uint64_t seed = 1;
  for (DType d : ds)
    for (const Shape& s : {Shape{}, Shape{0}, Shape{1, 5}, Shape{3, 4}})
      out.push_back({{sample_array(d, s, lo, hi, seed++)}, p, std::string(name(d)) + to_string(s)});
  for (DType d : narrow_and_wide_dtypes(k))  // one shape each for the other widths
    out.push_back({{sample_array(d, {3, 4}, lo, hi, seed++)}, p, std::string(name(d)) + "[3,4]"});
  return out;
}
/// Samples for an elementwise binary primitive, including broadcasting pairs.
template <class Params>
std::vector<Sample<Params>> binary_samples(unsigned k, double lo, double hi, Params p = {}) {
  std::vector<Sample<Params>> out;
  std::vector<DType> ds;
  if (k & kFloat) ds.insert(ds.end(), {DType::f32, DType::f64});
  if (k & kInt) ds.push_back(DType::i32);
  if (k & kBool) ds.push_back(DType::bool_);
  std::uint64_t seed = 100;
  const std::pair<Shape, Shape> shapes[] = {
      {{3, 4}, {3, 4}}, {{3, 4}, {}}, {{}, {2, 3}}, {{2, 1, 3}, {4, 1}}, {{0, 3}, {3}}, {{1}, {5}}};
  for (DType d : ds)
    for (auto& [a, b] : shapes)
      out.push_back({{sample_array(d, a, lo, hi, seed), sample_array(d, b, lo, hi, seed + 1)},
                     p,
                     std::string(name(d)) + to_string(a) + "," + to_string(b)});
  for (DType d : narrow_and_wide_dtypes(k))
    out.push_back({{sample_array(d, {2, 1, 3}, lo, hi, seed), sample_array(d, {4, 1}, lo, hi, seed + 1)},
                   p,
                   std::string(name(d)) + "[2,1,3],[4,1]"});
  return out;
}

}  // namespace canopy::detail

namespace canopy::detail {
/// broadcast_in_dim[params]'s broadcast_dimensions (for jit's passes).
const std::vector<int>& broadcast_dimensions_of(const ParamsRef& params);
/// An Eqn's params for broadcast_in_dim into `shape` (for jit's passes).
std::shared_ptr<const void> broadcast_params(const Shape& shape, std::vector<int> broadcast_dimensions);
/// An Eqn's params for reshape to `new_sizes` (for jit's passes).
std::shared_ptr<const void> reshape_params(const Shape& new_sizes);
/// slice[params]'s bounds (for jit's passes).
struct SliceBounds {
  std::span<const std::int64_t> start, limit, strides;
};
SliceBounds slice_bounds_of(const ParamsRef& params);
/// Stock abstract_eval of reduce_*: axes in range and distinct, reduced dims dropped.
Aval reduce_aval(std::string_view prim, const Aval& a, const std::vector<int>& axes, unsigned k);
/// Params of reduce_sum, reduce_max, reduce_min and reduce_prod: the axes reduced over.
struct ReduceParams {
  std::vector<int> axes;
};
/// The axes of a reduction made non-negative and sorted.
std::vector<int> sorted_axes(const std::vector<int>& axes, std::size_t rank);
/// Samples for reductions: single, multiple, negative and empty-dim axes.
template <class Params>
std::vector<Sample<Params>> reduce_samples(unsigned k) {
  std::vector<Sample<Params>> out;
  std::vector<DType> ds;
  if (k & kFloat) ds.insert(ds.end(), {DType::f32, DType::f64});
  if (k & kInt) ds.push_back(DType::i32);
  std::uint64_t seed = 7;
  for (DType d : ds) {
    out.push_back({{sample_array(d, {3, 4}, -3, 3, seed++)}, {{1}}, "last axis"});
    out.push_back({{sample_array(d, {3, 4}, -3, 3, seed++)}, {{0}}, "first axis"});
    out.push_back({{sample_array(d, {2, 3, 4}, -3, 3, seed++)}, {{0, 2}}, "outer and inner"});
    out.push_back({{sample_array(d, {2, 0, 3}, -3, 3, seed++)}, {{2}}, "empty kept dim"});
    out.push_back({{sample_array(d, {5}, -3, 3, seed++)}, {{-1}}, "negative axis"});
  }
  return out;
}
}  // namespace canopy::detail
