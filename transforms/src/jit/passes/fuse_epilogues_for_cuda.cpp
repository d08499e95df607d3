// jit's matmul epilogue on a GPU: a dot_general (f32, bf16, f16; operands read in place) whose
// result only feeds a bias row added to it becomes one `dot_general_bias` equation: one cuBLASLt
// matmul that adds the bias as it writes the product (kernels/cuda/cublaslt_matmul.cpp). A relu
// after it stays an elementwise op: cuBLASLt's relu epilogue turns NaN into 0, and the fused
// elementwise kernel that takes it reads the matmul's result once anyway.
#include "../../core/array_impl.hpp"
#include "../../primitives/common.hpp"
#include "../../primitives/linalg/matmul_shape.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/core/trace.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/matmul_precision.hpp"
#include "canopy/numpy.hpp"
#include "passes.hpp"

namespace canopy::detail {
namespace {

struct BiasRow {
  DotGeneralParams dot;  ///< the dot_general's, for the unfused path; its precision for both
  MatmulShape matmul;
};
struct BiasRowParams {
  std::shared_ptr<const BiasRow> epilogue;
  std::string ops;  ///< the fused primitives' names, in order, for printing
  std::vector<Aval> out_avals;
  const void* identity() const { return epilogue.get(); }
  Precision precision() const { return effective_precision(epilogue->dot.precision); }
};

/// The two steps with the ops every device has: dot_general, then the bias added to the product
/// seen as rows of n (the bias's n values, whatever shape it came in).
Array unfused(std::span<const Array> in, const BiasRow& ep, const Shape& result) {
  TraceGuard eager(&EvalTrace::instance());
  const std::int64_t n = ep.matmul.n;
  return dot_general_at(in[0], in[1], ep.dot.dimension_numbers, ep.dot.precision).reshape({shape_size(result) / n, n}) + in[2].reshape({n});
}

void run_unfused(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const Array y = unfused(in, *params.get<BiasRowParams>().epilogue, out[0].shape());
  copy_bytes(out[0], 0, y, 0, static_cast<std::size_t>(y.size()) * itemsize(y.dtype()));
}

void run_cuda(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const BiasRow& ep = *params.get<BiasRowParams>().epilogue;
  const MatmulShape& s = ep.matmul;
  if (kernels::cuda::matmul_bias(out[0].dtype(), cdata(in[0]), cdata(in[1]), cdata(in[2]), mutable_data(out[0]), s.batch,
                                 s.m, s.k, s.n, s.trans_a, s.trans_b, gpu_of(out[0]), effective_precision(ep.dot.precision)))
    return;
  // cuBLASLt has no algorithm for this call: cuBLAS's matmul, then the add.
  run_unfused(in, out, params);
}

const PrimitiveInfo& bias_primitive() {
  // A product plus a row: its magnitude is |x| @ |w| + |bias|.
  static const PrimitiveInfo info =
      matmul_pass_primitive<BiasRowParams>("dot_general_bias", run_unfused, run_cuda, true);
  return info;
}

/// Whether `x` is a row of the n columns of a value of shape `out`: n elements whose dims (leading
/// 1s dropped) are out's trailing dims, so that element f of the value gets x[f % n].
bool is_row(const Aval& x, const Shape& out, std::int64_t n) {
  if (x.size() != n) return false;
  std::size_t lead = 0;
  while (lead < x.shape.size() && x.shape[lead] == 1) ++lead;
  const std::size_t rank = x.shape.size() - lead;
  if (rank > out.size()) return false;
  for (std::size_t i = 0; i < rank; ++i)
    if (x.shape[lead + i] != out[out.size() - rank + i]) return false;
  return true;
}

}  // namespace

void fuse_epilogues_for_cuda(Program& p) {
  const std::size_t n_eqns = p.eqns.size();
  const auto [uses, reader] = readers_of(p);

  std::vector<bool> absorbed(n_eqns, false);
  std::vector<std::pair<std::size_t, Eqn>> fused;  // (runs where this equation was, equation)
  for (std::size_t k = 0; k < n_eqns; ++k) {
    const Eqn& e = p.eqns[k];
    if (e.prim->name != "dot_general" || e.in.size() != 2 || e.out.size() != 1 || e.in[0].is_zero() || e.in[1].is_zero())
      continue;
    const Aval &l = p.aval_of(e.in[0]), &r = p.aval_of(e.in[1]);
    const Aval& product = p.var_avals[static_cast<std::size_t>(e.out[0])];
    if (!is_gpu_epilogue_dtype(product.dtype) || l.dtype != product.dtype || r.dtype != product.dtype || product.size() == 0)
      continue;
    const auto& dot = e.params_ref().get<DotGeneralParams>();
    const std::optional<MatmulShape> shape = matmul_in_place(l.shape, r.shape, dot.dimension_numbers);
    if (!shape || shape->k == 0) continue;

    BiasRow ep{dot, *shape};
    Eqn out;
    out.prim = &bias_primitive();
    out.in = e.in;
    std::string ops = "dot_general";
    std::vector<std::size_t> chain;  // the equations after the dot_general that it takes
    int v = e.out[0];
    Shape value = product.shape;
    bool biased = false;
    // Reshapes keep the bytes (and so each element's column f % n): the chain may pass them on
    // its way to the add.
    while (uses[static_cast<std::size_t>(v)] == 1) {
      const auto next = static_cast<std::size_t>(reader[static_cast<std::size_t>(v)]);
      const Eqn& x = p.eqns[next];
      if (absorbed[next] || x.out.size() != 1) break;
      const Aval& result = p.var_avals[static_cast<std::size_t>(x.out[0])];
      if (result.dtype != product.dtype) break;
      chain.push_back(next);
      if (x.prim->name == "reshape" && x.in.size() == 1) {
        ops += ",reshape";
        v = x.out[0];
        value = result.shape;
        continue;
      }
      if (x.prim->name == "add" && x.in.size() == 2 && result.shape == value) {
        const Atom& other = x.in[x.in[0] == Atom::variable(v) ? 1 : 0];
        if (!other.is_zero() && other != Atom::variable(v) && p.aval_of(other).dtype == product.dtype &&
            is_row(p.aval_of(other), value, shape->n)) {
          biased = true;
          out.in.push_back(other);
          ops += ",add(row)";
          v = x.out[0];
        }
      }
      break;
    }
    if (!biased) continue;  // (when it is, the chain ends with the add)
    absorbed[k] = true;
    for (std::size_t c : chain) absorbed[c] = true;
    out.out = {v};
    out.params = std::make_shared<BiasRowParams>(BiasRowParams{std::make_shared<const BiasRow>(std::move(ep)),
                                                               std::move(ops), {p.var_avals[static_cast<std::size_t>(v)]}});
    fused.emplace_back(chain.back(), std::move(out));
  }
  splice_fused(p, absorbed, std::move(fused));
}

}  // namespace canopy::detail
