// `broadcast_in_dim`: rules, samples, op. Its one evaluation (`evaluate`) runs on every device.
#include <algorithm>

#include "../rules.hpp"

namespace canopy::prim {
struct BroadcastInDim {
  static constexpr std::string_view name = "broadcast_in_dim";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::of(Lowering::Kind::broadcast);
  struct Params {
    Shape shape;
    std::vector<int> broadcast_dimensions;
  };
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval& a = avals[0];
    const auto& bd = params.broadcast_dimensions;
    if (bd.size() != a.ndim())
      detail::raise<ShapeError>(name, "broadcast_dimensions", "", detail::concat("has ", bd.size(), " entries but the operand ",
                                                                                 to_string(a), " has rank ", a.ndim()));
    for (std::size_t i = 0; i < bd.size(); ++i) {
      bool ok = bd[i] >= 0 && bd[i] < static_cast<int>(params.shape.size()) && (i == 0 || bd[i] > bd[i - 1]);
      if (ok) {
        auto od = params.shape[static_cast<std::size_t>(bd[i])];
        ok = a.shape[i] == 1 || a.shape[i] == od;
      }
      if (!ok)
        detail::raise<ShapeError>(name, "operand", "dimension " + std::to_string(i),
                                  detail::concat(to_string(a), " cannot broadcast into ", to_string(params.shape),
                                                 " at output dimension ", bd[i]),
                                  "each operand dim must be 1 or equal the target dim, in increasing order");
    }
    return {a.dtype, params.shape, a.weak_type};
  }
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params& params) {
    Shape strides;
    strides.resize(params.shape.size(), 0);
    Shape in_strides = contiguous_strides(in[0].shape());
    for (std::size_t i = 0; i < params.broadcast_dimensions.size(); ++i)
      if (in[0].shape()[i] != 1) strides[static_cast<std::size_t>(params.broadcast_dimensions[i])] = in_strides[i];
    detail::strided_copy(out[0], itemsize(in[0].dtype()), detail::cdata(in[0]), strides, params.shape);
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    // Sum over the dims broadcasting created or stretched, then drop the created ones.
    (void)primals;
    const Aval& a = avals[0];
    std::vector<int> axes;
    std::vector<bool> mapped(params.shape.size(), false);
    for (std::size_t i = 0; i < params.broadcast_dimensions.size(); ++i) {
      auto d = static_cast<std::size_t>(params.broadcast_dimensions[i]);
      mapped[d] = true;
      if (a.shape[i] == 1 && params.shape[d] != 1) axes.push_back(static_cast<int>(d));
    }
    for (std::size_t d = 0; d < params.shape.size(); ++d)
      if (!mapped[d]) axes.push_back(static_cast<int>(d));
    std::sort(axes.begin(), axes.end());
    return {reshape(reduce_sum(ct[0], axes), a.shape)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    auto dims = params.shape.vec();
    dims.insert(dims.begin(), x[0].shape()[static_cast<std::size_t>(bdims[0])]);
    std::vector<int> bd{0};
    for (int d : params.broadcast_dimensions) bd.push_back(d + 1);
    return {{broadcast_in_dim(detail::batch_to_front(x[0], bdims[0]), Shape(dims), bd)}, {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {3}, -1, 1, 1)}, {{2, 3}, {1}}, "row"},
            {{sample_array(DType::f64, {3, 1}, -1, 1, 2)}, {{3, 4}, {0, 1}}, "column"},
            {{sample_array(DType::i32, {}, -9, 9, 3)}, {{2, 0, 3}, {}}, "scalar into empty"},
            {{sample_array(DType::bool_, {2}, 0, 1, 4)}, {{2, 5}, {0}}, "bool"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(BroadcastInDim);
}  // namespace canopy::prim

namespace canopy::detail {
const std::vector<int>& broadcast_dimensions_of(const ParamsRef& params) {
  return params.get<prim::BroadcastInDim::Params>().broadcast_dimensions;
}
std::shared_ptr<const void> broadcast_params(const Shape& shape, std::vector<int> broadcast_dimensions) {
  return std::make_shared<prim::BroadcastInDim::Params>(prim::BroadcastInDim::Params{shape, std::move(broadcast_dimensions)});
}
}  // namespace canopy::detail

namespace canopy {
Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int>& broadcast_dimensions) {
  if (x.shape() == shape) return x;
  return bind1<prim::BroadcastInDim>({x}, {shape, broadcast_dimensions});
}
}  // namespace canopy
