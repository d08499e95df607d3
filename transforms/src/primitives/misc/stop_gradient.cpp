// `stop_gradient`: the identity whose derivative is zero. Its one evaluation (`evaluate`) runs on
// every device.
#include <cstring>

#include "../rules.hpp"

namespace canopy::prim {
struct StopGradient {
  static constexpr std::string_view name = "stop_gradient";
  static constexpr Arity arity = Arity::exactly(1);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) { return avals[0]; }
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::copy_bytes(out[0], 0, in[0], 0, static_cast<std::size_t>(in[0].size()) * itemsize(in[0].dtype()));
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array>, const Params&) { return {{stop_gradient(x[0])}, {Array()}}; }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<StopGradient>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::unary_samples<Params>(detail::kAll, -3, 3); }
};
CANOPY_REGISTER_PRIMITIVE(StopGradient);
}  // namespace canopy::prim

namespace canopy {
Array stop_gradient(const Array& x) {
  if (!x.is_tracer()) return x;  // a concrete value has no derivative to stop
  return bind1<prim::StopGradient>({x});
}
}  // namespace canopy
