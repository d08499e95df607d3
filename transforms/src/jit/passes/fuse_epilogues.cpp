// Matmul and convolution epilogue fusion: a `dot_general` (f32, operands read in place) or a
// `conv_general_dilated` (f32, channels innermost in its result) followed by a chain of
// elementwise steps that only it feeds (a bias row, a scale, a full-size addend, negation, tanh)
// becomes one `dot_general_epilogue` / `conv_general_dilated_epilogue` equation, whose kernel is
// one oneDNN primitive with those steps as post-ops: each result is finished while the primitive
// holds it instead of being written, read back and written again by an elementwise kernel.
#include <algorithm>
#include <array>
#include <sstream>

#include "../../core/array_impl.hpp"
#include "../../primitives/conv/conv_geometry.hpp"
#include "../../primitives/linalg/matmul_shape.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/cpu_nn.hpp"
#include "passes.hpp"

namespace canopy::detail {
namespace {

using kernels::BinaryOp;
using kernels::cpu::EpilogueStep;
using kernels::UnaryOp;
using Kind = Lowering::Kind;
using Op = EpilogueStep::Op;
using Operand = EpilogueStep::Operand;

struct Epilogue {
  MatmulShape matmul;                               ///< for dot_general
  std::optional<kernels::ConvGeometry> conv;  ///< for conv_general_dilated
  std::vector<EpilogueStep> steps;
};
struct EpilogueParams {
  std::shared_ptr<const Epilogue> epilogue;
  std::string ops;  ///< the fused primitives' names, in order, for printing
  std::vector<Aval> out_avals;
  const void* identity() const { return epilogue.get(); }
};

const char* operand_name(Operand o) {
  switch (o) {
    case Operand::scalar: return "(scalar)";
    case Operand::row: return "(row)";
    case Operand::full: return "(full)";
    case Operand::destination:
    case Operand::none: break;
  }
  return "";
}

void run_epilogue(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const Epilogue& ep = *params.get<EpilogueParams>().epilogue;
  std::array<const float*, kernels::cpu::kMaxEpilogueSteps> operands{};
  std::array<EpilogueStep, kernels::cpu::kMaxEpilogueSteps> steps{};
  auto* result = static_cast<float*>(mutable_data(out[0]));
  std::size_t next = 0;
  for (std::size_t i = 0; i < ep.steps.size(); ++i) {
    steps[i] = ep.steps[i];
    if (steps[i].operand == Operand::none) continue;
    operands[next] = static_cast<const float*>(cdata(in[2 + next]));
    // jit gave the result a donated input's buffer that this step adds: read where it is.
    if (operands[next] == result) steps[i].operand = Operand::destination;
    ++next;
  }
  const MatmulShape& s = ep.matmul;
  kernels::cpu::matmul_f32_epilogue(static_cast<const float*>(cdata(in[0])), static_cast<const float*>(cdata(in[1])),
                                    result, s.batch, s.m, s.k, s.n, s.trans_a, s.trans_b,
                                    std::span(steps.data(), ep.steps.size()), std::span(operands.data(), next));
}

void run_conv_epilogue(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const Epilogue& ep = *params.get<EpilogueParams>().epilogue;
  std::array<const float*, kernels::cpu::kMaxEpilogueSteps> operands{};
  for (std::size_t i = 2; i < in.size(); ++i) operands[i - 2] = static_cast<const float*>(cdata(in[i]));
  kernels::cpu::conv_f32_epilogue(static_cast<const float*>(cdata(in[0])), static_cast<const float*>(cdata(in[1])),
                                  static_cast<float*>(mutable_data(out[0])), *ep.conv, ep.steps,
                                  std::span(operands.data(), in.size() - 2));
}

const PrimitiveInfo& epilogue_primitive() {
  static const PrimitiveInfo info = pass_primitive<EpilogueParams>("dot_general_epilogue", run_epilogue);
  return info;
}
const PrimitiveInfo& conv_epilogue_primitive() {
  static const PrimitiveInfo info = pass_primitive<EpilogueParams>("conv_general_dilated_epilogue", run_conv_epilogue);
  return info;
}

/// The epilogue a dot_general or conv_general_dilated equation starts (its shape or geometry,
/// and the result's columns / channels, innermost), or nullopt when it cannot take one.
std::optional<std::pair<Epilogue, std::int64_t>> start(const Program& p, const Eqn& e) {
  const bool dot = e.prim->name == "dot_general", conv = e.prim->name == "conv_general_dilated";
  if (!(dot || conv) || e.in.size() != 2 || e.in[0].is_zero() || e.in[1].is_zero() || e.out.size() != 1) return std::nullopt;
  const Aval &l = p.aval_of(e.in[0]), &r = p.aval_of(e.in[1]);
  const Aval& result = p.var_avals[static_cast<std::size_t>(e.out[0])];
  if (l.dtype != DType::f32 || r.dtype != DType::f32 || result.dtype != DType::f32 || result.size() == 0) return std::nullopt;
  if (dot) {
    const auto shape = matmul_in_place(l.shape, r.shape, e.params_ref().get<DotGeneralParams>().dimension_numbers);
    if (!shape || shape->k == 0) return std::nullopt;
    return std::pair{Epilogue{*shape, std::nullopt, {}}, shape->n};
  }
  kernels::ConvGeometry g = conv_geometry(e.params_ref(), l.shape, r.shape, result.shape);
  // Channels innermost (NHWC-like outputs): a bias is then a row of the result.
  if (g.out_strides[1] != 1 || g.in_features == 0) return std::nullopt;
  const std::int64_t channels = g.out_features;
  return std::pair{Epilogue{{}, std::move(g), {}}, channels};
}

/// How `x` is read against a matmul result of shape `out` with n columns, or nullopt.
std::optional<Operand> operand_mode(const Aval& x, const Shape& out, std::int64_t n) {
  if (x.dtype != DType::f32) return std::nullopt;
  if (x.shape == out) return Operand::full;
  if (x.size() == 1) return Operand::scalar;
  if (x.size() != n) return std::nullopt;
  // A row: x's dims (leading 1s dropped) are the result's trailing dims, which hold its n columns.
  std::size_t lead = 0;
  while (lead < x.shape.size() && x.shape[lead] == 1) ++lead;
  const std::size_t rank = x.shape.size() - lead;
  if (rank > out.size()) return std::nullopt;
  for (std::size_t i = 0; i < rank; ++i)
    if (x.shape[lead + i] != out[out.size() - rank + i]) return std::nullopt;
  return Operand::row;
}

/// The epilogue steps equation `e` adds to a chain whose current value is `v` (shape `out`, n
/// columns), and the operand it reads (a zero atom when none); empty when e cannot extend it.
struct Extension {
  std::vector<EpilogueStep> steps;
  Atom operand = Atom::zeros();
};
Extension extension(const Program& p, const Eqn& e, int v, const Shape& out, std::int64_t n) {
  if (e.out.size() != 1) return {};
  const Aval& result = p.var_avals[static_cast<std::size_t>(e.out[0])];
  if (result.dtype != DType::f32 || result.shape != out) return {};
  if (e.prim->lowering_applies && !e.prim->lowering_applies(e.params_ref())) return {};
  const Lowering& l = e.prim->lowering;
  if (l.kind == Kind::unary && e.in.size() == 1) {
    switch (static_cast<UnaryOp>(l.op)) {
      case UnaryOp::neg: return {{{Op::neg}}};
      case UnaryOp::tanh: return {{{Op::tanh}}};
      // Not exp or logistic: oneDNN's forms clamp their input (NaN becomes inf) and flush
      // results below ~1.7e-38 to 0 where the eager kernels still give normal floats.
      default: return {};
    }
  }
  if (l.kind != Kind::binary || e.in.size() != 2) return {};
  const bool first = e.in[0] == Atom::variable(v);
  const Atom& other = e.in[first ? 1 : 0];
  if (other.is_zero()) return {};
  const auto mode = operand_mode(p.aval_of(other), out, n);
  if (!mode) return {};
  switch (static_cast<BinaryOp>(l.op)) {
    case BinaryOp::add: return {{{Op::add, *mode}}, other};
    case BinaryOp::mul: return {{{Op::mul, *mode}}, other};
    case BinaryOp::sub:
      if (first) return {{{Op::sub, *mode}}, other};
      return {{{Op::neg}, {Op::add, *mode}}, other};  // x - v = -v + x, exactly
    case BinaryOp::div:
      if (first) return {{{Op::div, *mode}}, other};
      return {};
    default: return {};
  }
}

}  // namespace

bool epilogue_reads_in_place(const PrimitiveInfo& prim, const ParamsRef& params, std::size_t operand) {
  // Not a convolution's epilogue (its kernel has no sum post-op path), nor the matmul's own
  // operands (read throughout).
  if (&prim != &epilogue_primitive() || operand < 2) return false;
  std::size_t next = 2;
  for (const EpilogueStep& s : params.get<EpilogueParams>().epilogue->steps) {
    if (s.operand == Operand::none) continue;
    if (next++ == operand) return s.operand == Operand::full && (s.op == Op::add || s.op == Op::sub);
  }
  return false;
}

void fuse_epilogues(Program& p) {
  const std::size_t n_eqns = p.eqns.size();
  const auto [uses, reader] = readers_of(p);

  std::vector<bool> absorbed(n_eqns, false);
  std::vector<std::pair<std::size_t, Eqn>> fused;  // (runs where this equation was, equation)
  for (std::size_t k = 0; k < n_eqns; ++k) {
    const Eqn& e = p.eqns[k];
    if (absorbed[k]) continue;
    auto started = start(p, e);
    if (!started) continue;
    auto& [epilogue, columns] = *started;
    const Aval& result = p.var_avals[static_cast<std::size_t>(e.out[0])];
    std::string ops(e.prim->name);
    Eqn out;
    out.prim = epilogue.conv ? &conv_epilogue_primitive() : &epilogue_primitive();
    out.in = e.in;
    int v = e.out[0];
    std::size_t last = k;
    while (uses[static_cast<std::size_t>(v)] == 1) {
      const std::size_t next = static_cast<std::size_t>(reader[static_cast<std::size_t>(v)]);
      if (absorbed[next]) break;  // already the end of another matmul's chain (dot + dot)
      Extension x = extension(p, p.eqns[next], v, result.shape, columns);
      if (x.steps.empty() || epilogue.steps.size() + x.steps.size() > kernels::cpu::kMaxEpilogueSteps) break;
      ops += ",";
      ops += p.eqns[next].prim->name;
      ops += operand_name(x.steps.back().operand);
      epilogue.steps.insert(epilogue.steps.end(), x.steps.begin(), x.steps.end());
      if (!x.operand.is_zero()) out.in.push_back(x.operand);
      absorbed[next] = true;
      v = p.eqns[next].out[0];
      last = next;
    }
    if (epilogue.steps.empty()) continue;
    absorbed[k] = true;
    out.out = {v};
    out.params = std::make_shared<EpilogueParams>(EpilogueParams{std::make_shared<const Epilogue>(std::move(epilogue)),
                                                                 std::move(ops), {p.var_avals[static_cast<std::size_t>(v)]}});
    fused.emplace_back(last, std::move(out));
  }
  splice_fused(p, absorbed, std::move(fused));
}

Readers readers_of(const Program& p) {
  Readers r{std::vector<int>(p.var_avals.size(), 0), std::vector<int>(p.var_avals.size(), -1)};
  for (std::size_t k = 0; k < p.eqns.size(); ++k)
    for (const Atom& a : p.eqns[k].in)
      if (a.is_var()) {
        ++r.uses[static_cast<std::size_t>(a.index)];
        r.reader[static_cast<std::size_t>(a.index)] = static_cast<int>(k);
      }
  for (const Atom& a : p.outs)
    if (a.is_var()) r.uses[static_cast<std::size_t>(a.index)] += 2;
  return r;
}

void splice_fused(Program& p, const std::vector<bool>& absorbed, std::vector<std::pair<std::size_t, Eqn>> fused) {
  if (fused.empty()) return;
  std::vector<Eqn> eqns;
  eqns.reserve(p.eqns.size());
  std::size_t next_fused = 0;
  std::sort(fused.begin(), fused.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t k = 0; k < p.eqns.size(); ++k) {
    if (!absorbed[k]) eqns.push_back(std::move(p.eqns[k]));
    while (next_fused < fused.size() && fused[next_fused].first == k) eqns.push_back(std::move(fused[next_fused++].second));
  }
  p.eqns = std::move(eqns);
}

}  // namespace canopy::detail
