// `concatenate` (lax.concatenate): rules, samples, op (jnp.concatenate's promotion). Its one
// evaluation (`evaluate`) runs on every device.
#include "../rules.hpp"
#include "../slicing/windows.hpp"

namespace canopy::prim {
struct Concatenate {
  static constexpr std::string_view name = "concatenate";
  static constexpr Arity arity = Arity::at_least(1);
  struct Params {
    int dimension = 0;
  };
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    if (avals.empty()) detail::raise<ShapeError>(name, "operands", "", "are empty", "pass at least one array");
    const Aval& a = avals[0];
    if (a.ndim() == 0)
      detail::raise<ShapeError>(name, "operand", "argument 0", detail::concat(to_string(a), " is a scalar"),
                                "zero-dimensional arrays cannot be concatenated");
    const auto dim = static_cast<std::size_t>(detail::normalize_axis(name, params.dimension, a.ndim(), a));
    Aval out = a;
    for (std::size_t i = 1; i < avals.size(); ++i) {
      const Aval& b = avals[i];
      if (b.dtype != a.dtype)
        detail::raise<TypeError>(name, "operand", "argument " + std::to_string(i),
                                 detail::concat(to_string(b), " differs in dtype from ", to_string(a)),
                                 "promote them first (jnp.concatenate does)");
      bool ok = b.ndim() == a.ndim();
      for (std::size_t d = 0; ok && d < a.ndim(); ++d) ok = d == dim || b.shape[d] == a.shape[d];
      if (!ok)
        detail::raise<ShapeError>(name, "operand", "argument " + std::to_string(i),
                                  detail::concat(to_string(b), " does not match ", to_string(a),
                                                 " outside dimension ", dim));
      if (__builtin_add_overflow(out.shape[dim], b.shape[dim], &out.shape[dim]))
        detail::raise<ShapeError>(name, "operand", "argument " + std::to_string(i),
                                  detail::concat(to_string(b), " makes dimension ", dim,
                                                 " longer than int64 can count"));
      out.weak_type = out.weak_type && b.weak_type;
    }
    return out;
  }
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params& params) {
    const Shape& os = out[0].shape();
    const auto dim = static_cast<std::size_t>(params.dimension < 0 ? params.dimension + static_cast<int>(os.size())
                                                                   : params.dimension);
    Shape ost = contiguous_strides(os);
    const std::size_t w = itemsize(out[0].dtype());
    std::int64_t at = 0;
    for (const Array& x : in) {
      detail::copy_strided(out[0], w, detail::cdata(x), contiguous_strides(x.shape()), x.shape(),
                           static_cast<char*>(detail::mutable_data(out[0])) + at * ost[dim] * static_cast<std::int64_t>(w), ost);
      at += x.shape()[dim];
    }
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    // Each linear operand receives its band of the cotangent.
    const int rank = static_cast<int>(avals[0].ndim());
    const auto dim = static_cast<std::size_t>(params.dimension < 0 ? params.dimension + rank : params.dimension);
    Arrays res(avals.size());
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < avals.size(); ++i) {
      std::int64_t n = avals[i].shape[dim];
      if (!primals[i].valid()) {
        std::vector<std::int64_t> start(ct[0].ndim(), 0), limit = ct[0].shape().vec();
        start[dim] = offset;
        limit[dim] = offset + n;
        res[i] = slice(ct[0], start, limit);
      }
      offset += n;
    }
    return res;
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    // Every operand gets the batch in front (unbatched ones broadcast), then the axis moves up one.
    std::int64_t n = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (bdims[i] >= 0) n = x[i].shape()[static_cast<std::size_t>(bdims[i])];
    Arrays ops;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (bdims[i] >= 0) {
        ops.push_back(detail::batch_to_front(x[i], bdims[i]));
        continue;
      }
      auto dims = x[i].shape().vec();
      dims.insert(dims.begin(), n);
      std::vector<int> keep;
      for (std::size_t d = 0; d < x[i].ndim(); ++d) keep.push_back(static_cast<int>(d + 1));
      ops.push_back(broadcast_in_dim(x[i], Shape(dims), keep));
    }
    const int rank = static_cast<int>(ops[0].ndim()) - 1;
    return {bind<Concatenate>(ops, {(params.dimension < 0 ? params.dimension + rank : params.dimension) + 1}), {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {2, 3}, -1, 1, 1), sample_array(DType::f32, {4, 3}, -1, 1, 2)}, {0}, "rows"},
            {{sample_array(DType::i32, {2, 1}, -9, 9, 3), sample_array(DType::i32, {2, 0}, -9, 9, 4),
              sample_array(DType::i32, {2, 3}, -9, 9, 5)}, {-1}, "columns with an empty one"},
            {{sample_array(DType::bool_, {3}, 0, 1, 6)}, {0}, "single"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Concatenate);
}  // namespace canopy::prim

namespace canopy {
Array concatenate(const std::vector<Array>& xs, int axis) {
  if (xs.empty()) detail::raise<ShapeError>("concatenate", "operands", "", "are empty", "pass at least one array");
  if (xs[0].ndim() > 0) axis = detail::normalize_axis("concatenate", axis, xs[0].ndim(), xs[0].aval());
  if (xs.size() == 1 && xs[0].ndim() > 0) return xs[0];
  return bind<prim::Concatenate>(detail::promote(xs, "concatenate"), {axis})[0];
}
}  // namespace canopy
