// `dynamic_slice` (lax.dynamic_slice): rules, samples, ops. Inputs: the operand, then one integer
// scalar start per dim; the backends' kernels (src/backends/<kind>/slicing.cpp) clamp each start to
// [0, dim - size] as XLA does (the public op has already turned negative starts into dim + start),
// a GPU's reading the starts on the device.
#include "../rules.hpp"
#include "windows.hpp"

namespace canopy::prim {
struct DynamicSlice;
namespace {
/// dynamic_slice of `operand` at the starts of the primitive's inputs (already normalised).
Array bind1_with_starts(const Array& operand, std::span<const Array> inputs, const auto& params);
}  // namespace
struct DynamicSlice {
  static constexpr std::string_view name = "dynamic_slice";
  static constexpr Arity arity = Arity::at_least(1);
  struct Params {
    std::vector<std::int64_t> slice_sizes;
  };
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval& a = avals[0];
    if (avals.size() != a.ndim() + 1 || params.slice_sizes.size() != a.ndim())
      detail::raise<ShapeError>(name, "start_indices/slice_sizes", "",
                                detail::concat("have ", avals.size() - 1, "/", params.slice_sizes.size(),
                                               " entries but the operand ", to_string(a), " has rank ", a.ndim()));
    for (std::size_t d = 1; d < avals.size(); ++d) {
      detail::expect_index(name, "start index", avals[d], static_cast<int>(d));
      if (avals[d].ndim() != 0)
        detail::raise<ShapeError>(name, "start index", "argument " + std::to_string(d),
                                  detail::concat(to_string(avals[d]), " must be a scalar"));
    }
    for (std::size_t d = 0; d < a.ndim(); ++d)
      if (params.slice_sizes[d] < 0 || params.slice_sizes[d] > a.shape[d])
        detail::raise<ShapeError>(name, "slice_sizes", detail::list_text(params.slice_sizes),
                                  detail::concat("do not fit the operand ", to_string(a)),
                                  "need 0 <= size <= dim in every dimension");
    return {a.dtype, Shape(params.slice_sizes), a.weak_type};
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    // Linear in the operand; the starts are indices.
    Array y = bind1_with_starts(x[0], x, params);
    return {{y}, {t[0].valid() ? bind1_with_starts(t[0], x, params) : Array()}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    // The cotangent goes back into a zero operand at the same (clamped) starts.
    if (primals[0].valid()) detail::raise<UnimplementedRule>(name, "transpose", "", "is linear in the operand only");
    Arrays starts(primals.begin() + 1, primals.end());
    (void)params;
    Arrays res(primals.size());
    res[0] = dynamic_update_slice(zeros(avals[0].shape, avals[0].dtype), ct[0], starts);
    return res;
  }
  // As jax: a batch of dynamic slices is one gather in clip mode (which clamps starts the same
  // way); a batched operand is indexed by example number too.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    const std::int64_t n = detail::batch_size(x, bdims);
    const bool batched_operand = bdims[0] >= 0;
    const Array operand = detail::batch_to_front(x[0], bdims[0]);
    const int r = static_cast<int>(params.slice_sizes.size());
    Shape example = x[0].shape();
    if (batched_operand) {
      auto dims = operand.shape().vec();
      dims.erase(dims.begin());
      example = Shape(dims);
    }
    const Array idx = detail::batched_starts(x.subspan(1), bdims.subspan(1), n, example, Shape(params.slice_sizes),
                                             batched_operand);
    GatherDimensionNumbers dn;
    std::vector<std::int64_t> sizes = params.slice_sizes;
    for (int d = 0; d < r; ++d) dn.offset_dims.push_back(d + 1);
    for (int d = 0; d < r + (batched_operand ? 1 : 0); ++d) dn.start_index_map.push_back(d);
    if (batched_operand) {
      dn.collapsed_slice_dims = {0};
      sizes.insert(sizes.begin(), 1);
    }
    return {{gather(operand, idx, dn, Shape(sizes), GatherScatterMode::clip)}, {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {5, 6}, -1, 1, 1), scalar(1), scalar(4)}, {{2, 3}}, "clamped column"},
            {{sample_array(DType::i32, {4}, -9, 9, 2), scalar(7u)}, {{0}}, "empty"},
            {{sample_array(DType::f64, {}, -1, 1, 3)}, {{}}, "scalar"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(DynamicSlice);
namespace {
Array bind1_with_starts(const Array& operand, std::span<const Array> inputs, const auto& params) {
  Arrays in(inputs.begin(), inputs.end());
  in[0] = operand;
  return bind<DynamicSlice>(in, params)[0];
}
}  // namespace
}  // namespace canopy::prim

namespace canopy {
namespace detail {
// lax's _dynamic_slice_indices: a negative start s means dim + s. Count mismatches fall through
// to abstract_eval's ShapeError.
std::vector<Array> normalize_starts(const Array& x, const std::vector<Array>& starts, const char* api) {
  std::vector<Array> out;
  for (std::size_t d = 0; d < starts.size(); ++d) {
    expect_index(api, "start index", starts[d].aval(), static_cast<int>(d) + 1);
    if (is_unsigned(starts[d].dtype()) || d >= x.ndim()) { out.push_back(starts[d]); continue; }
    // Narrow signed starts are widened first: the dim may not fit their dtype.
    const Array s = itemsize(starts[d].dtype()) < 4 ? starts[d].astype(DType::i32) : starts[d];
    Array dim = full({}, static_cast<double>(x.shape()[d]), s.dtype());
    out.push_back(where(s < 0, s + dim, s));
  }
  return out;
}
std::vector<Array> static_starts(const Array& x, const std::vector<std::int64_t>& starts) {
  std::vector<Array> out;
  for (std::size_t d = 0; d < starts.size(); ++d) {
    std::int64_t s = starts[d] < 0 && d < x.ndim() ? starts[d] + x.shape()[d] : starts[d];
    // Clamping first keeps huge starts representable in i32 without changing the result.
    std::int64_t hi = d < x.ndim() ? x.shape()[d] : 0;
    out.push_back(scalar(static_cast<std::int32_t>(std::clamp<std::int64_t>(s, 0, hi))));
  }
  return out;
}
}  // namespace detail

Array dynamic_slice(const Array& x, const std::vector<Array>& start_indices, const std::vector<std::int64_t>& slice_sizes) {
  std::vector<Array> in{x};
  for (auto& s : detail::normalize_starts(x, start_indices, "dynamic_slice")) in.push_back(s);
  return bind<prim::DynamicSlice>(in, {slice_sizes})[0];
}
Array dynamic_slice(const Array& x, const std::vector<std::int64_t>& start_indices,
                    const std::vector<std::int64_t>& slice_sizes) {
  std::vector<Array> in{x};
  for (auto& s : detail::static_starts(x, start_indices)) in.push_back(s);
  return bind<prim::DynamicSlice>(in, {slice_sizes})[0];
}
}  // namespace canopy
