// jit's convolution epilogue on a GPU: a conv_general_dilated (f32, bf16, f16; a forward
// convolution cuDNN takes) whose result only feeds the add of a bias along its output features
// becomes one `conv_general_dilated_bias` equation: one cuDNN graph of the convolution and a
// pointwise add of the bias (kernels/cuda/cudnn_conv.cpp). The relu after it is not taken into
// the graph: cuDNN does not specify that its pointwise RELU_FWD keeps a NaN (max(NaN, 0) must be
// NaN, as jax's relu gives), so it stays an elementwise op for fuse_elementwise_for_cuda.
#include "../../core/array_impl.hpp"
#include "../../primitives/common.hpp"
#include "../../primitives/conv/conv_geometry.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/core/trace.hpp"
#include "canopy/kernels/cuda_nn.hpp"
#include "canopy/matmul_precision.hpp"
#include "passes.hpp"

namespace canopy::detail {
namespace {

struct ConvBias {
  const PrimitiveInfo* conv = nullptr;  ///< conv_general_dilated, for the unfused path
  std::shared_ptr<const void> conv_params;
  std::size_t feature_dim = 0;  ///< the result's output feature dim
  bool bias_first = false;      ///< the add's operand order (bias + conv), kept by the unfused path
  ParamsRef conv_ref() const { return {conv_params.get(), conv->params_type}; }
};
struct ConvBiasParams {
  std::shared_ptr<const ConvBias> epilogue;
  std::string ops;  ///< the fused primitives' names, for printing
  std::vector<Aval> out_avals;
  const void* identity() const { return epilogue.get(); }
  Precision precision() const { return conv_precision(epilogue->conv_ref()); }
};

/// The two steps with the kernels of the program it replaces (on a CPU, that program's results bit
/// for bit): the convolution, then the add of the bias shaped 1 x ... x C x ... x 1 (the values of
/// the add's broadcast operand, element for element).
void run_unfused(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const ConvBias& ep = *params.get<ConvBiasParams>().epilogue;
  TraceGuard eager(&EvalTrace::instance());
  const Array operands[] = {in[0], in[1]};
  const Array y = detail::bind(*ep.conv, operands, ep.conv_ref())[0];
  std::vector<std::int64_t> dims(y.ndim(), 1);
  dims[ep.feature_dim] = y.shape()[ep.feature_dim];
  const Array bias = in[2].reshape(Shape(dims));
  const Array sum = ep.bias_first ? bias + y : y + bias;
  copy_bytes(out[0], 0, sum, 0, static_cast<std::size_t>(sum.size()) * itemsize(sum.dtype()));
}

void run_cuda(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const ConvBias& ep = *params.get<ConvBiasParams>().epilogue;
  const kernels::ConvGeometry g = conv_geometry(ep.conv_ref(), in[0].shape(), in[1].shape(), out[0].shape());
  if (kernels::cuda::conv_bias(out[0].dtype(), cdata(in[0]), cdata(in[1]), cdata(in[2]), mutable_data(out[0]), g,
                               gpu_of(out[0]), conv_precision(ep.conv_ref())))
    return;
  // cuDNN is off or missing, or has no plan for the graph: the convolution, then the add.
  run_unfused(in, out, params);
}

const PrimitiveInfo& conv_bias_primitive() {
  // A convolution plus a bias: its magnitude is conv(|x|, |w|) + |bias|; cuDNN may sum it by a
  // fast transform, as the convolution alone.
  static const PrimitiveInfo info = [] {
    PrimitiveInfo i = matmul_pass_primitive<ConvBiasParams>("conv_general_dilated_bias", run_unfused, run_cuda, true);
    i.fast_transform_sums = true;
    return i;
  }();
  return info;
}

/// Whether an operand of `shape` holds C (= out[feature]) values that broadcast along the feature
/// dim alone, as numpy aligns it with `out`: every dim 1 except the one aligned with `feature`.
bool is_feature_bias(const Shape& shape, const Shape& out, std::size_t feature) {
  if (shape.size() > out.size() || shape_size(shape) != out[feature]) return false;
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && out.size() - shape.size() + i != feature) return false;
  return true;
}

}  // namespace

void fuse_conv_bias_for_cuda(Program& p) {
  const std::size_t n_eqns = p.eqns.size();
  const auto [uses, reader] = readers_of(p);
  std::vector<int> defined_at(p.var_avals.size(), -1);
  for (std::size_t k = 0; k < n_eqns; ++k)
    for (int v : p.eqns[k].out) defined_at[static_cast<std::size_t>(v)] = static_cast<int>(k);

  std::vector<bool> absorbed(n_eqns, false);
  std::vector<std::pair<std::size_t, Eqn>> fused;  // (runs where the add was, equation)
  for (std::size_t k = 0; k < n_eqns; ++k) {
    const Eqn& e = p.eqns[k];
    if (e.prim->name != "conv_general_dilated" || e.in.size() != 2 || e.out.size() != 1 || e.in[0].is_zero() ||
        e.in[1].is_zero())
      continue;
    const int v = e.out[0];
    const Aval& result = p.var_avals[static_cast<std::size_t>(v)];
    const Aval &l = p.aval_of(e.in[0]), &r = p.aval_of(e.in[1]);
    if (!is_gpu_epilogue_dtype(result.dtype) || l.dtype != result.dtype || r.dtype != result.dtype || result.size() == 0 ||
        uses[static_cast<std::size_t>(v)] != 1)
      continue;
    if (!kernels::cuda::conv_bias_form(conv_geometry(e.params_ref(), l.shape, r.shape, result.shape))) continue;
    const auto at = static_cast<std::size_t>(reader[static_cast<std::size_t>(v)]);
    const Eqn& add = p.eqns[at];
    if (absorbed[at] || add.prim->name != "add" || add.in.size() != 2 || add.out.size() != 1 ||
        p.var_avals[static_cast<std::size_t>(add.out[0])] != result)
      continue;
    const bool bias_first = add.in[1] == Atom::variable(v);
    Atom bias = add.in[bias_first ? 0 : 1];
    if (bias.is_zero() || bias == Atom::variable(v) || p.aval_of(bias).dtype != result.dtype) continue;
    const std::size_t feature = conv_out_feature_dim(e.params_ref());
    std::optional<std::size_t> broadcast;  // the broadcast_in_dim the bias came through, if absorbed
    if (!is_feature_bias(p.aval_of(bias).shape, result.shape, feature)) {
      // bias = broadcast_in_dim(b) with b's C values along the feature dim: the add reads b.
      if (!bias.is_var()) continue;
      const int def = defined_at[static_cast<std::size_t>(bias.index)];
      if (def < 0) continue;
      const Eqn& b = p.eqns[static_cast<std::size_t>(def)];
      if (b.prim->name != "broadcast_in_dim" || b.in.size() != 1 || b.in[0].is_zero()) continue;
      const Aval& values = p.aval_of(b.in[0]);
      const std::vector<int>& dims = broadcast_dimensions_of(b.params_ref());
      bool along_features = values.dtype == result.dtype && values.size() == result.shape[feature];
      for (std::size_t i = 0; i < values.shape.size() && along_features; ++i)
        along_features = values.shape[i] == 1 || static_cast<std::size_t>(dims[i]) == feature;
      if (!along_features) continue;
      if (uses[static_cast<std::size_t>(bias.index)] == 1) broadcast = static_cast<std::size_t>(def);
      bias = b.in[0];
    }
    absorbed[k] = absorbed[at] = true;
    if (broadcast) absorbed[*broadcast] = true;
    Eqn out;
    out.prim = &conv_bias_primitive();
    out.in = {e.in[0], e.in[1], bias};
    out.out = {add.out[0]};
    out.params = std::make_shared<ConvBiasParams>(
        ConvBiasParams{std::make_shared<const ConvBias>(ConvBias{e.prim, e.params, feature, bias_first}),
                       broadcast ? "conv_general_dilated,broadcast_in_dim,add(bias)" : "conv_general_dilated,add(bias)",
                       {result}});
    fused.emplace_back(at, std::move(out));
  }
  splice_fused(p, absorbed, std::move(fused));
}

}  // namespace canopy::detail
