// `ppermute`: each lane (device) sends its value to another along a named axis, by a list of
// (source, destination) pairs; a lane nobody sends to gets zeros. Its one evaluation (`evaluate`)
// runs on every device.
#include <set>

#include "collective.hpp"

namespace canopy::prim {
struct Ppermute {
  static constexpr std::string_view name = "ppermute";
  static constexpr Arity arity = Arity::exactly(1);
  struct Params {
    std::string axis_name;
    std::vector<std::pair<int, int>> perm;  ///< (source, destination) axis indices
  };
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    check(params, detail::bound_axis_size(params.axis_name));
    return avals[0];
  }
  /// Sources and destinations each at most once, inside the axis (when its size is known).
  static void check(const Params& params, std::int64_t n) {
    std::set<int> sources, destinations;
    for (auto [s, d] : params.perm) {
      if (s < 0 || d < 0 || (n >= 0 && (s >= n || d >= n)))
        detail::raise<ShapeError>(name, "pair", detail::concat("(", s, ", ", d, ")"),
                                  n >= 0 ? detail::concat("leaves the axis '", params.axis_name, "' of size ", n)
                                         : std::string("has a negative index"));
      if (!sources.insert(s).second || !destinations.insert(d).second)
        detail::raise<ShapeError>(name, "pair", detail::concat("(", s, ", ", d, ")"),
                                  "repeats a source or a destination", "perm must be a permutation (or part of one)");
    }
  }
  static void evaluate(std::span<const Array> x, std::span<Array> out, const Params& params) {
    out[0] = detail::device_ppermute(detail::running_axis(name, params.axis_name), x[0], params.perm, name);
  }
  // On a pmap over GPUs: the same meeting, the operands combined on the GPUs (collectives_peer.cpp).
  // Lane d takes lane perm^-1(d)'s value: a gather along the batch axis, zeros where no source.
  static detail::BatchResult collective(std::span<const Array> x, std::span<const int> bdims, std::int64_t n,
                                        const Params& params) {
    check(params, n);
    int b = bdims[0];
    Array xb = x[0];
    if (b < 0) {
      auto dims = x[0].shape().vec();
      dims.insert(dims.begin(), n);
      std::vector<int> keep;
      for (std::size_t d = 0; d < x[0].ndim(); ++d) keep.push_back(static_cast<int>(d + 1));
      xb = broadcast_in_dim(x[0], Shape(dims), keep);
      b = 0;
    }
    std::vector<std::int32_t> source(static_cast<std::size_t>(n), 0);
    std::vector<std::uint8_t> has(static_cast<std::size_t>(n), 0);
    for (auto [s, d] : params.perm) {
      source[static_cast<std::size_t>(d)] = s;
      has[static_cast<std::size_t>(d)] = 1;
    }
    Array taken = take(xb, array_from_data(source.data(), DType::i32, Shape{n}), b);
    auto mask_shape = std::vector<std::int64_t>(xb.ndim(), 1);
    mask_shape[static_cast<std::size_t>(b)] = n;
    Array mask = array_from_data(has.data(), DType::bool_, Shape{n}).reshape(Shape(mask_shape));
    return {{where(mask, taken, zeros_like(taken))}, {b}};
  }
  // A permutation's transpose sends every cotangent back where its value came from.
  static Arrays transpose(std::span<const Array> ct, std::span<const Array>, std::span<const Aval>, const Params& params) {
    std::vector<std::pair<int, int>> back;
    for (auto [s, d] : params.perm) back.emplace_back(d, s);
    return {ppermute(ct[0], params.axis_name, back)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_lanewise<Ppermute>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return {}; }  // needs a vmap or pmap: vmap_collectives_test
};
CANOPY_REGISTER_PRIMITIVE(Ppermute);
}  // namespace canopy::prim

namespace canopy {
Array ppermute(const Array& x, const std::string& axis_name, std::vector<std::pair<int, int>> perm) {
  return bind1<prim::Ppermute>({x}, {axis_name, std::move(perm)});
}
}  // namespace canopy
