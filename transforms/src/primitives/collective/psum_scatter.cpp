// `psum_scatter`: the sum over a named axis, of which lane i keeps only block i along
// `scatter_dimension` (jax.lax.psum_scatter; reduce-scatter). Its one evaluation (`evaluate`) runs
// on every device.
#include "collective.hpp"

namespace canopy::prim {
struct PsumScatter {
  static constexpr std::string_view name = "psum_scatter";
  static constexpr Arity arity = Arity::exactly(1);
  struct Params {
    std::string axis_name;
    int scatter_dimension = 0;
    bool tiled = false;  ///< keep the dimension, 1/n of its size; else it must be n and disappears
  };
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const std::int64_t n = detail::bound_axis_size(params.axis_name);
    if (n < 0) detail::raise_unbound_axis(name, params.axis_name);
    return scattered(avals[0], params, n);
  }
  static Aval scattered(Aval a, const Params& params, std::int64_t n) {
    const int d = params.scatter_dimension;
    if (d < 0 || d >= static_cast<int>(a.shape.size()))
      detail::raise<ShapeError>(name, "scatter_dimension", std::to_string(d),
                                detail::concat("is not an axis of ", to_string(a)));
    auto dims = a.shape.vec();
    const std::int64_t m = dims[static_cast<std::size_t>(d)];
    if (params.tiled ? m % n != 0 : m != n)
      detail::raise<ShapeError>(name, "operand", to_string(a),
                                detail::concat("has ", m, " along scatter_dimension ", d, " but the axis '",
                                               params.axis_name, "' has ", n, " devices"),
                                params.tiled ? "tiled needs a multiple of the axis size" : "untiled needs exactly the axis size");
    if (params.tiled) dims[static_cast<std::size_t>(d)] = m / n;
    else dims.erase(dims.begin() + d);
    a.shape = Shape(dims);
    return a;
  }
  /// Block `i` of `full` along the scatter dimension.
  static Array block(const Array& full, const Params& params, std::int64_t i, std::int64_t n) {
    const auto d = static_cast<std::size_t>(params.scatter_dimension);
    std::vector<std::int64_t> start(full.ndim(), 0), limit = full.shape().vec();
    const std::int64_t m = params.tiled ? limit[d] / n : 1;
    start[d] = i * m;
    limit[d] = (i + 1) * m;
    Array s = slice(full, start, limit);
    return params.tiled ? s : squeeze(s, std::vector<int>{params.scatter_dimension});
  }
  static void evaluate(std::span<const Array> x, std::span<Array> out, const Params& params) {
    const detail::AxisContext& axis = detail::running_axis(name, params.axis_name);
    Array full = detail::device_all_reduce(axis, x[0], detail::processes::ReduceOp::sum, name);
    out[0] = block(full, params, axis.index, axis.size);
  }
  // On a pmap over GPUs: the same meeting, the operands combined on the GPUs (collectives_peer.cpp).
  // The lanes' sum, its scatter dimension (split into lanes x blocks when tiled) the batch axis.
  static detail::BatchResult collective(std::span<const Array> x, std::span<const int> bdims, std::int64_t n,
                                        const Params& params) {
    Array s = bdims[0] < 0 ? x[0] * static_cast<double>(n) : reduce_sum(x[0], {bdims[0]});
    (void)scattered(s.aval(), params, n);  // checks the shape
    const int d = params.scatter_dimension;
    if (params.tiled) {
      auto dims = s.shape().vec();
      const std::int64_t m = dims[static_cast<std::size_t>(d)];
      dims[static_cast<std::size_t>(d)] = m / n;
      dims.insert(dims.begin() + d, n);
      s = s.reshape(Shape(dims));
    }
    return {{s}, {d}};
  }
  // Each lane's block of the sum came from every lane: the cotangents gathered back (all_gather
  // along the scatter dimension, tiled or not).
  static Arrays transpose(std::span<const Array> ct, std::span<const Array>, std::span<const Aval> avals,
                          const Params& params) {
    Array g = detail::move_axis(all_gather(ct[0], params.axis_name), 0, params.scatter_dimension);
    return {params.tiled ? g.reshape(avals[0].shape) : g};
  }
  // Over another vmap axis: the scatter dimension moves past the batch axis when it follows it.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    const int b = bdims[0];
    Params p = params;
    if (b <= params.scatter_dimension) ++p.scatter_dimension;
    Array y = bind1<PsumScatter>({x[0]}, p);
    return {{y}, {params.tiled || b < p.scatter_dimension ? b : b - 1}};
  }
  static std::vector<Sample<Params>> samples() { return {}; }  // needs a vmap or pmap: vmap_collectives_test
};
CANOPY_REGISTER_PRIMITIVE(PsumScatter);
}  // namespace canopy::prim

namespace canopy {
Array psum_scatter(const Array& x, const std::string& axis_name, int scatter_dimension, bool tiled) {
  return bind1<prim::PsumScatter>({x}, {axis_name, scatter_dimension, tiled});
}
}  // namespace canopy
