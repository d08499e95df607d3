// `dynamic_update_slice` (lax.dynamic_update_slice): rules, samples, ops. Inputs: operand, update,
// one integer scalar start per dim; the backends' kernels (src/backends/<kind>/slicing.cpp) clamp
// starts to [0, dim - update dim] so the update always lands whole, as in XLA, a GPU's reading the
// starts on the device.
#include "../rules.hpp"
#include "windows.hpp"

namespace canopy::prim {
struct DynamicUpdateSlice {
  static constexpr std::string_view name = "dynamic_update_slice";
  static constexpr Arity arity = Arity::at_least(2);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    const Aval &a = avals[0], &u = avals[1];
    if (a.dtype != u.dtype)
      detail::raise<TypeError>(name, "update", "argument 1",
                               detail::concat(to_string(u), " must have the operand's dtype ", to_string(a)));
    if (u.ndim() != a.ndim() || avals.size() != a.ndim() + 2)
      detail::raise<ShapeError>(name, "update/start_indices", "",
                                detail::concat("update ", to_string(u), " and ", avals.size() - 2,
                                               " start indices do not match the operand ", to_string(a)),
                                "both need one entry per operand dim");
    for (std::size_t d = 0; d < a.ndim(); ++d)
      if (u.shape[d] > a.shape[d])
        detail::raise<ShapeError>(name, "update", "argument 1",
                                  detail::concat(to_string(u), " is larger than the operand ", to_string(a)));
    for (std::size_t d = 2; d < avals.size(); ++d) {
      detail::expect_index(name, "start index", avals[d], static_cast<int>(d));
      if (avals[d].ndim() != 0)
        detail::raise<ShapeError>(name, "start index", "argument " + std::to_string(d),
                                  detail::concat(to_string(avals[d]), " must be a scalar"));
    }
    return {a.dtype, a.shape, a.weak_type && u.weak_type};
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    // Linear in the operand and the update jointly; the starts are indices.
    (void)params;
    Arrays starts(x.begin() + 2, x.end());
    Array y = dynamic_update_slice(x[0], x[1], starts);
    if (!t[0].valid() && !t[1].valid()) return {{y}, {Array()}};
    Array to = detail::instantiate(t[0], x[0].aval()), tu = detail::instantiate(t[1], x[1].aval());
    return {{y}, {dynamic_update_slice(to, tu, starts)}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    // The operand keeps the cotangent outside the window; the update gets the window.
    (void)params;
    Arrays starts(primals.begin() + 2, primals.end());
    Arrays res(primals.size());
    if (!primals[0].valid()) res[0] = dynamic_update_slice(ct[0], zeros(avals[1].shape, avals[1].dtype), starts);
    if (!primals[1].valid()) res[1] = dynamic_slice(ct[0], starts, avals[1].shape.vec());
    return res;
  }
  // As jax: a batch of dynamic updates is one scatter in clip mode over the batched operand, each
  // update indexed by its example number.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params&) {
    const std::int64_t n = detail::batch_size(x, bdims);
    const Array operand = detail::front_or_broadcast(x[0], bdims[0], n);
    const Array update = detail::front_or_broadcast(x[1], bdims[1], n);
    auto drop_first = [](const Shape& s) {
      auto dims = s.vec();
      dims.erase(dims.begin());
      return Shape(dims);
    };
    const Array idx = detail::batched_starts(x.subspan(2), bdims.subspan(2), n, drop_first(operand.shape()),
                                             drop_first(update.shape()), true);
    const int r = static_cast<int>(x[0].ndim()) - (bdims[0] >= 0 ? 1 : 0);
    ScatterDimensionNumbers dn;
    dn.inserted_window_dims = {0};
    for (int d = 0; d < r; ++d) dn.update_window_dims.push_back(d + 1);
    for (int d = 0; d <= r; ++d) dn.scatter_dims_to_operand_dims.push_back(d);
    return {{scatter(operand, idx, update, dn, GatherScatterMode::clip)}, {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {5, 6}, -1, 1, 1), sample_array(DType::f32, {2, 3}, -1, 1, 2), scalar(1),
              scalar(5)}, {}, "clamped"},
            {{sample_array(DType::i32, {4}, -9, 9, 3), sample_array(DType::i32, {0}, -9, 9, 4), scalar(2u)}, {}, "empty"},
            {{sample_array(DType::f64, {}, -1, 1, 5), sample_array(DType::f64, {}, -1, 1, 6)}, {}, "scalar"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(DynamicUpdateSlice);
}  // namespace canopy::prim

namespace canopy {
namespace {
Array update_as_operand(const Array& x, const Array& update) {
  // A weakly typed update (a C++ scalar) takes the operand's dtype; a strong one must match.
  return update.weak_type() && update.dtype() != x.dtype() ? detail::convert_weak(update, x.dtype(), false) : update;
}
}  // namespace

Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start_indices) {
  std::vector<Array> in{x, update_as_operand(x, update)};
  for (auto& s : detail::normalize_starts(x, start_indices, "dynamic_update_slice")) in.push_back(s);
  return bind<prim::DynamicUpdateSlice>(in)[0];
}
Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<std::int64_t>& start_indices) {
  std::vector<Array> in{x, update_as_operand(x, update)};
  for (auto& s : detail::static_starts(x, start_indices)) in.push_back(s);
  return bind<prim::DynamicUpdateSlice>(in)[0];
}
}  // namespace canopy
