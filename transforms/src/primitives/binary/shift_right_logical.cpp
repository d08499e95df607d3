// Everything canopy knows about the `shift_right_logical` primitive (lax.shift_right_logical: bits shifted right filling zeros; amounts outside [0, bits) give 0): rules, kernel, samples, op.
// As in XLA, the amount is read as unsigned, so negative amounts are out of range too.
#include "../../../../kernels/cuda/element_math.hpp"  // the shift, shared with the GPU kernel
#include "../rules.hpp"
#include "elementwise_loop.hpp"

namespace canopy::prim {
struct ShiftRightLogical {
  static constexpr std::string_view name = "shift_right_logical";
  static constexpr Arity arity = Arity::exactly(2);
  struct Params {};
  static constexpr bool nondifferentiable = true;  // integer outputs
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    return detail::binary_aval(name, avals, detail::kInt);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::eval_binary_loop<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::int32_t, std::uint32_t, std::int64_t, std::uint64_t>(in, out, []<class T>(T x, T amount) {
      return kernels::cuda::math::shift_right_logical(x, amount);
    });
  }
  static void eval_cuda(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::cuda_special_binary(kernels::cuda::SpecialBinaryOp::shift_right_logical, in, out);
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<ShiftRightLogical>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::binary_samples<Params>(detail::kInt, -40, 40); }
};
CANOPY_REGISTER_PRIMITIVE(ShiftRightLogical);
}  // namespace canopy::prim

namespace canopy {
Array shift_right_logical(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "shift_right_logical");
  return bind1<prim::ShiftRightLogical>({p[0], p[1]});
}
}  // namespace canopy
