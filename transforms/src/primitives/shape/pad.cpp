// `pad` (lax.pad): rules, samples, op, and the placing of the operand that the backends' kernels
// run after filling the result with the padding value (src/backends/<kind>/slicing.cpp: a GPU
// reads the padding value on the device).
#include <algorithm>

#include "../rules.hpp"
#include "../slicing/windows.hpp"
#include "pad_params.hpp"

namespace canopy::prim {
namespace {
std::vector<int> all_axes(const Array& x) {
  std::vector<int> a;
  for (std::size_t d = 0; d < x.ndim(); ++d) a.push_back(static_cast<int>(d));
  return a;
}
}  // namespace
struct Pad {
  static constexpr std::string_view name = "pad";
  static constexpr Arity arity = Arity::exactly(2);
  using Params = detail::PadParams;
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval &a = avals[0], &v = avals[1];
    const auto& cfg = params.padding_config;
    if (v.dtype != a.dtype || v.ndim() != 0)
      detail::raise<TypeError>(name, "padding_value", "argument 1",
                               detail::concat(to_string(v), " must be a scalar of the operand's dtype ", to_string(a)));
    if (cfg.size() != a.ndim())
      detail::raise<ShapeError>(name, "padding_config", "",
                                detail::concat("has ", cfg.size(), " entries but the operand ", to_string(a), " has rank ",
                                               a.ndim()));
    Aval out{a.dtype, {}, a.weak_type && v.weak_type};
    for (std::size_t d = 0; d < a.ndim(); ++d) {
      const PadConfig& c = cfg[d];
      std::int64_t n = a.shape[d], size = 0;
      if (c.interior >= 0 && (__builtin_mul_overflow(n > 0 ? n - 1 : 0, c.interior, &size) ||
                              __builtin_add_overflow(size, n, &size) || __builtin_add_overflow(size, c.low, &size) ||
                              __builtin_add_overflow(size, c.high, &size)))
        detail::raise<ShapeError>(name, "padding_config", "dimension " + std::to_string(d),
                                  detail::concat("(low=", c.low, ", high=", c.high, ", interior=", c.interior,
                                                 ") pads the operand ", to_string(a), " past what int64 can count"));
      if (c.interior < 0 || size < 0)
        detail::raise<ShapeError>(name, "padding_config", "dimension " + std::to_string(d),
                                  detail::concat("(low=", c.low, ", high=", c.high, ", interior=", c.interior,
                                                 ") does not fit the operand ", to_string(a)),
                                  "interior must be >= 0 and the padded size >= 0");
      out.shape.push_back(size);
    }
    return out;
  }
  /// Where the operand's surviving elements go: from element `src` of the operand (its own
  /// strides) to element `dst` of the result with strides `dst_strides`, `counts` of them per dim.
  struct Placement {
    std::int64_t src = 0, dst = 0;
    Shape counts, dst_strides;
    bool empty = false;  ///< nothing of the operand survives: the fill is the result
  };
  static Placement placement(const Shape& in_shape, const Shape& out_shape, const Params& params) {
    Placement p;
    Shape ist = contiguous_strides(in_shape), ost = contiguous_strides(out_shape);
    // Paddings are any int64 whose padded size fits (interior may be INT64_MAX over one element):
    // positions are computed in 128 bits, and only those of copied elements come back to int64.
    using Wide = __int128;
    for (std::size_t d = 0; d < in_shape.size(); ++d) {
      const PadConfig& c = params.padding_config[d];
      const Wide step = Wide{c.interior} + 1, od = out_shape[d], low = c.low;
      // Element i lands at low + i * step; keep those with 0 <= position < od.
      const Wide first = low >= 0 ? 0 : (-low + step - 1) / step;
      const Wide end = od - low <= 0 ? 0 : std::min<Wide>(in_shape[d], (od - low + step - 1) / step);
      if (end <= first) {
        p.empty = true;
        return p;
      }
      p.counts.push_back(static_cast<std::int64_t>(end - first));
      p.src += static_cast<std::int64_t>(first) * ist[d];
      p.dst += static_cast<std::int64_t>(low + first * step) * ost[d];
      // With two or more elements kept, step * ost[d] is below the output's size; with one, unused.
      p.dst_strides.push_back(end - first > 1 ? static_cast<std::int64_t>(step) * ost[d] : 0);
    }
    return p;
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    // The operand's cotangent is read back at its positions (zeros where negative padding cut it
    // off); the padding value's is everything else: the total minus the operand's part.
    const Aval& a = avals[0];
    std::vector<PadConfig> restore;
    std::vector<std::int64_t> start, limit, stride;
    for (std::size_t d = 0; d < a.ndim(); ++d) {
      const PadConfig& c = params.padding_config[d];
      restore.push_back({std::max<std::int64_t>(-c.low, 0), std::max<std::int64_t>(-c.high, 0), 0});
      std::int64_t lo = std::max<std::int64_t>(c.low, 0), n = a.shape[d];
      start.push_back(lo);
      limit.push_back(n == 0 ? lo : lo + (n - 1) * (c.interior + 1) + 1);
      stride.push_back(c.interior + 1);
    }
    Array widened = pad(ct[0], zeros({}, ct[0].dtype()), restore);
    Array operand_ct = slice(widened, start, limit, stride);
    Arrays res(2);
    if (!primals[0].valid()) res[0] = operand_ct;
    if (!primals[1].valid()) res[1] = reshape(reduce_sum(ct[0], all_axes(ct[0])) - reduce_sum(operand_ct, all_axes(operand_ct)), {});
    return res;
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    Params p = params;
    p.padding_config.insert(p.padding_config.begin(), PadConfig{});
    Array operand = detail::batch_to_front(x[0], bdims[0]);
    if (bdims[1] < 0) {
      if (bdims[0] >= 0) return {{bind1<Pad>({operand, x[1]}, p)}, {0}};
      return {{bind1<Pad>({operand, x[1]}, params)}, {-1}};
    }
    // A padding value per example: pad with any value, then select it where a mask says "padding".
    const std::int64_t n = x[1].shape()[static_cast<std::size_t>(bdims[1])];
    if (bdims[0] < 0) {
      auto dims = operand.shape().vec();
      dims.insert(dims.begin(), n);
      std::vector<int> keep;
      for (std::size_t d = 0; d < operand.ndim(); ++d) keep.push_back(static_cast<int>(d + 1));
      operand = broadcast_in_dim(operand, Shape(dims), keep);
    }
    Array values = x[1].ndim() == 1 ? x[1] : detail::batch_to_front(x[1], bdims[1]);
    Array padded = bind1<Pad>({operand, zeros({}, operand.dtype())}, p);
    Array mask = bind1<Pad>({zeros(operand.shape(), DType::bool_), ones({}, DType::bool_)}, p);
    Array fill = broadcast_in_dim(reshape(values, {n}), padded.shape(), {0});
    return {{select_n(mask, {padded, fill})}, {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {3, 4}, -1, 1, 1), scalar(0.5f)}, {{{1, 2, 0}, {0, 1, 1}}}, "edges, interior"},
            {{sample_array(DType::i32, {5}, -9, 9, 2), scalar(7)}, {{{-2, -1, 1}}}, "negative"},
            {{sample_array(DType::f64, {0, 2}, -1, 1, 3), scalar(1.0)}, {{{1, 1, 3}, {0, 0, 0}}}, "empty operand"},
            {{sample_array(DType::bool_, {2}, 0, 1, 4), scalar(true)}, {{{-2, 0, 0}}}, "all removed"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Pad);
}  // namespace canopy::prim

namespace canopy::detail {
void place_padded_operand(const Array& operand, const Array& out, const PadParams& params) {
  const prim::Pad::Placement p = prim::Pad::placement(operand.shape(), out.shape(), params);
  if (p.empty) return;
  const std::size_t w = itemsize(operand.dtype());
  const auto sw = static_cast<std::int64_t>(w);
  copy_strided(out, w, static_cast<const char*>(cdata(operand)) + p.src * sw, contiguous_strides(operand.shape()), p.counts,
               static_cast<char*>(mutable_data(out)) + p.dst * sw, p.dst_strides);
}
}  // namespace canopy::detail

namespace canopy {
Array pad(const Array& x, const Array& padding_value, const std::vector<PadConfig>& padding_config) {
  // A weakly typed padding value (a C++ scalar) takes the operand's dtype, as in jnp.
  Array v = padding_value.weak_type() ? detail::convert_weak(padding_value, x.dtype(), false) : padding_value;
  // No padding anywhere is x itself (max pooling's windows and their transposes ask for it); a
  // wrong rank or dtype still goes to the primitive, which names the mistake.
  const bool identity = padding_config.size() == x.ndim() && v.dtype() == x.dtype() && v.ndim() == 0 &&
                        std::all_of(padding_config.begin(), padding_config.end(), [](const PadConfig& c) {
                          return c.low == 0 && c.high == 0 && c.interior == 0;
                        });
  if (identity) return x;
  return bind1<prim::Pad>({x, v}, {padding_config});
}
}  // namespace canopy
