// jit's bias-gradient epilogue on a GPU. The backward pass of a dense layer y = x @ w + b reads
// the cotangent g (batch x n) twice over its batch axis: dw = dot_general(x, g) contracting axis 0
// of both, and db = reduce_sum(g, axes=(0,)). The pair becomes one `dot_general_bias_grad`
// equation with both results: one cuBLASLt matmul whose BGRADA/BGRADB epilogue sums g's columns
// as it reads g (kernels/cuda/cublaslt_matmul.cpp).
//
// The sum's accumulation: canopy's reduce_sum adds in double on both devices, cuBLASLt's epilogue
// in f32 (the compute type every plan here has) and writes the sums in g's dtype. f32 accumulation
// is JAX's own on a GPU (XLA reduces f32 in f32; jnp.sum widens bf16/f16 to f32 first), and GPU
// verification (CANOPY_GPU_VERIFY) allows a sum of k terms 4 * 2^-24 * sqrt(k) * sum|terms| beyond
// rtol: the allowance it already gives cuBLAS's f32 accumulation of the k products of the same
// matmul. For bf16/f16 the rounding of the result to 8 or 11 bits (rtol 1e-2) dwarfs f32's
// accumulation error. A sum in a wider dtype than g's (a reduction of a widened copy) reads
// another variable and never matches.
#include <algorithm>
#include <limits>
#include <optional>

#include "../../core/array_impl.hpp"
#include "../../primitives/common.hpp"
#include "../../primitives/linalg/matmul_shape.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/core/trace.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/matmul_precision.hpp"
#include "canopy/ops.hpp"
#include "passes.hpp"

namespace canopy::detail {
namespace {

struct BiasGrad {
  DotGeneralParams dot;  ///< the dot_general's, for the unfused path; its precision for both
  MatmulShape matmul;    ///< no batch; the summed operand read k x m (lhs, trans_a) or k x n (rhs)
  std::size_t summed;    ///< the operand whose columns are summed: 0 (lhs) or 1 (rhs)
};
struct BiasGradParams {
  std::shared_ptr<const BiasGrad> epilogue;
  std::string ops;  ///< the fused primitives' names, for printing
  std::vector<Aval> out_avals;  ///< the product's, then the sums'
  const void* identity() const { return epilogue.get(); }
  Precision precision() const { return effective_precision(epilogue->dot.precision); }
};

/// The two steps with the ops every device has: the same kernels as the program it replaces, so
/// on a CPU its results are that program's bit for bit.
void run_unfused(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const BiasGrad& ep = *params.get<BiasGradParams>().epilogue;
  TraceGuard eager(&EvalTrace::instance());
  const Array product = dot_general_at(in[0], in[1], ep.dot.dimension_numbers, ep.dot.precision);
  const Array sums = reduce_sum(in[ep.summed], {0});
  for (std::size_t o = 0; o < 2; ++o) {
    const Array& y = o == 0 ? product : sums;
    copy_bytes(out[o], 0, y, 0, static_cast<std::size_t>(y.size()) * itemsize(y.dtype()));
  }
}

void run_cuda(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const BiasGrad& ep = *params.get<BiasGradParams>().epilogue;
  const MatmulShape& s = ep.matmul;
  if (kernels::cuda::matmul_bias_grad(out[0].dtype(), cdata(in[0]), cdata(in[1]), mutable_data(out[0]),
                                      mutable_data(out[1]), s.m, s.k, s.n, s.trans_a, s.trans_b, ep.summed == 1,
                                      gpu_of(out[0]), effective_precision(ep.dot.precision)))
    return;
  // cuBLASLt has no algorithm for this call: cuBLAS's matmul, then the reduction.
  run_unfused(in, out, params);
}

const PrimitiveInfo& bias_grad_primitive() {
  // A product and a sum: their magnitudes are |x| @ |g| and sum |g|.
  static const PrimitiveInfo info =
      matmul_pass_primitive<BiasGradParams>("dot_general_bias_grad", run_unfused, run_cuda, false);
  return info;
}

/// The bias gradient `e` computes along with its product when it is a 2-D dot_general (f32, bf16,
/// f16, one dtype throughout, no batch dims, operands read in place) that contracts `g` over its
/// leading axis alone.
std::optional<BiasGrad> bias_grad_of(const Program& p, const Eqn& e, const Atom& g) {
  if (e.prim->name != "dot_general" || e.in.size() != 2 || e.out.size() != 1 || e.in[0].is_zero() || e.in[1].is_zero())
    return std::nullopt;
  const Aval &l = p.aval_of(e.in[0]), &r = p.aval_of(e.in[1]);
  const Aval& product = p.var_avals[static_cast<std::size_t>(e.out[0])];
  if (!is_gpu_epilogue_dtype(product.dtype) || l.dtype != product.dtype || r.dtype != product.dtype || l.ndim() != 2 ||
      r.ndim() != 2 || product.size() == 0)
    return std::nullopt;
  const auto& dot = e.params_ref().get<DotGeneralParams>();
  const DotDimensionNumbers& dn = dot.dimension_numbers;
  if (!dn.lhs_batch.empty() || !dn.rhs_batch.empty()) return std::nullopt;
  const std::vector<int> leading{0};
  std::size_t summed;
  if (e.in[1] == g && dn.rhs_contracting == leading) summed = 1;
  else if (e.in[0] == g && dn.lhs_contracting == leading) summed = 0;
  else return std::nullopt;
  const std::optional<MatmulShape> shape = matmul_in_place(l.shape, r.shape, dn);
  if (!shape || shape->k == 0) return std::nullopt;
  return BiasGrad{dot, *shape, summed};
}

/// Fuses the first (reduce_sum, dot_general) pair of p that may be, and says whether there was
/// one. The fused equation goes after the later definition of the dot_general's operands and
/// before the first reader of either result (where no such place exists the pair stays as it is).
bool fuse_one(Program& p) {
  const std::size_t n_eqns = p.eqns.size(), n_vars = p.var_avals.size();
  constexpr int kNever = std::numeric_limits<int>::max();
  std::vector<int> defined_at(n_vars, -1), first_reader(n_vars, kNever);
  std::vector<std::vector<std::size_t>> readers(n_vars);
  for (std::size_t k = 0; k < n_eqns; ++k) {
    for (int v : p.eqns[k].out) defined_at[static_cast<std::size_t>(v)] = static_cast<int>(k);
    for (const Atom& a : p.eqns[k].in)
      if (a.is_var()) {
        const auto v = static_cast<std::size_t>(a.index);
        first_reader[v] = std::min(first_reader[v], static_cast<int>(k));
        if (readers[v].empty() || readers[v].back() != k) readers[v].push_back(k);
      }
  }
  for (std::size_t r = 0; r < n_eqns; ++r) {
    const Eqn& sum = p.eqns[r];
    if (sum.prim->name != "reduce_sum" || sum.in.size() != 1 || sum.out.size() != 1 || !sum.in[0].is_var()) continue;
    const Aval& g = p.aval_of(sum.in[0]);
    const Aval& sums = p.var_avals[static_cast<std::size_t>(sum.out[0])];
    if (g.ndim() != 2 || sums.dtype != g.dtype || sorted_axes(sum.params_ref().get<ReduceParams>().axes, 2) != std::vector<int>{0})
      continue;
    for (std::size_t k : readers[static_cast<std::size_t>(sum.in[0].index)]) {
      const Eqn& dot = p.eqns[k];
      const std::optional<BiasGrad> ep = bias_grad_of(p, dot, sum.in[0]);
      if (!ep) continue;
      int operands_ready = -1;
      for (const Atom& a : dot.in)
        if (a.is_var()) operands_ready = std::max(operands_ready, defined_at[static_cast<std::size_t>(a.index)]);
      const int first_read =
          std::min(first_reader[static_cast<std::size_t>(dot.out[0])], first_reader[static_cast<std::size_t>(sum.out[0])]);
      const std::size_t at = std::max(static_cast<std::size_t>(std::max(operands_ready, 0)), std::min(k, r));
      if (static_cast<int>(at) >= first_read) continue;
      Eqn fused;
      fused.prim = &bias_grad_primitive();
      fused.in = dot.in;
      fused.out = {dot.out[0], sum.out[0]};
      const char* operand = ep->summed == 1 ? "rhs" : "lhs";
      fused.params = std::make_shared<BiasGradParams>(BiasGradParams{
          std::make_shared<const BiasGrad>(*ep), concat("dot_general,reduce_sum(", operand, ")"),
          {p.var_avals[static_cast<std::size_t>(dot.out[0])], sums}});
      std::vector<bool> absorbed(n_eqns, false);
      absorbed[k] = absorbed[r] = true;
      std::vector<std::pair<std::size_t, Eqn>> one;
      one.emplace_back(at, std::move(fused));
      splice_fused(p, absorbed, std::move(one));
      return true;
    }
  }
  return false;
}

}  // namespace

void fuse_bias_gradients_for_cuda(Program& p) {
  // One pair at a time, each found on the program as the last one left it: a layer's pair may
  // read or feed another's, and each placement is worked out from definitions and readers as
  // they are.
  while (fuse_one(p)) {
  }
}

}  // namespace canopy::detail
