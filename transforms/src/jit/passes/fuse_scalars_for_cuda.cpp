// Scalar fusion for GPUs: a program's one-element elementwise steps of any dtype (an optimizer's
// i32 step counter and its saturation, the f32 bias corrections computed from it, a loss's sum
// and scale) become one `fused_scalars` equation, one thread of one generated kernel. On a GPU each
// such step was a launch of its own (and a select_n two, its case table copied up first) for
// one element of work; elementwise fusion cannot take them, its registers being f32.
#include <algorithm>
#include <optional>

#include "../../core/array_impl.hpp"
#include "../../primitives/common.hpp"
#include "canopy/kernels/cuda.hpp"
#include "passes.hpp"

namespace canopy::detail {
namespace {

using kernels::ScalarProgram;
using kernels::ScalarStep;
using Kind = Lowering::Kind;

struct ScalarsParams {
  std::vector<Eqn> members;  ///< the merged equations (their primitives and params), in order
  std::shared_ptr<const ScalarProgram> program;  ///< step k is members[k]
  std::string ops;
  std::vector<Aval> out_avals;
  const void* identity() const { return program.get(); }
};

/// Runs the program: on a GPU as its generated kernel where there is one, else (and on a CPU,
/// which GPU verification and tests use) each member's own kernel in turn over the block's arrays.
template <Device::Kind kind>
void run_scalars(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const ScalarsParams& s = params.get<ScalarsParams>();
  if constexpr (kind == Device::Kind::cuda) {
    std::vector<const void*> src;
    std::vector<void*> dst;
    for (const Array& a : in) src.push_back(cdata(a));
    for (const Array& a : out) dst.push_back(mutable_data(a));
    if (kernels::cuda::scalar_program(*s.program, src, dst, out[0].device().index)) return;
  }
  for (std::size_t k = 0; k < s.members.size(); ++k) {
    const ScalarStep& step = s.program->steps[k];
    auto value = [&](int v) -> const Array& {
      return v < static_cast<int>(in.size()) ? in[static_cast<std::size_t>(v)] : out[static_cast<std::size_t>(v) - in.size()];
    };
    if (step.kind == ScalarStep::Kind::copy) {  // a reshape or broadcast of the one element
      copy_bytes(out[k], 0, value(step.operands[0]), 0, itemsize(step.dtype));
      continue;
    }
    Arrays operands;
    for (int v : step.operands) operands.push_back(value(v));
    s.members[k].prim->kernel(kind)(operands, out.subspan(k, 1), s.members[k].params_ref());
  }
}

const PrimitiveInfo& scalars_primitive() {
  static const PrimitiveInfo info = [] {
    PrimitiveInfo i = pass_primitive<ScalarsParams>("fused_scalars", run_scalars<Device::Kind::cpu>);
    i.kernels.set(Device::Kind::cuda, run_scalars<Device::Kind::cuda>);
    // A sum adds up in an order of each device's own, and the steps after one may read it.
    i.accumulating_output = [](const ParamsRef& params, std::size_t output) {
      const auto& steps = params.get<ScalarsParams>().program->steps;
      for (std::size_t k = 0; k <= output && k < steps.size(); ++k)
        if (steps[k].kind == ScalarStep::Kind::sum) return true;
      return false;
    };
    return i;
  }();
  return info;
}

bool one_scalar(const Aval& a) { return a.size() == 1 && kernels::scalar_program_dtype(a.dtype); }

/// The step equation e is in a scalar program (its operands not yet numbered), or nullopt where
/// it cannot be one: one result of a native dtype, and an elementwise op, a conversion, a select
/// of a bool or i32 index, a reshape or broadcast, each of single elements, or a sum of at most
/// kernels::kMaxScalarSum elements (a loss's, before its scale).
std::optional<ScalarStep> scalar_step(const Program& p, const Eqn& e) {
  if (e.out.size() != 1 || e.in.empty() || !one_scalar(p.var_avals[static_cast<std::size_t>(e.out[0])])) return std::nullopt;
  const Lowering& l = e.prim->lowering;
  if (e.prim->lowering_applies && !e.prim->lowering_applies(e.params_ref())) return std::nullopt;
  ScalarStep s;
  s.dtype = p.var_avals[static_cast<std::size_t>(e.out[0])].dtype;
  s.op = l.op;
  if (l.kind == Kind::reduction && static_cast<kernels::ReduceOp>(l.op) == kernels::ReduceOp::sum && e.in.size() == 1 &&
      !e.in[0].is_zero()) {
    const Aval& in = p.aval_of(e.in[0]);
    s.kind = in.size() == 1 ? ScalarStep::Kind::copy : ScalarStep::Kind::sum;
    const bool ok = in.dtype == s.dtype && (in.size() == 1 ? kernels::scalar_program_dtype(in.dtype)
                                                           : kernels::scalar_sum_dtype(in.dtype) && in.size() <= kernels::kMaxScalarSum);
    return ok ? std::optional(s) : std::nullopt;
  }
  for (const Atom& a : e.in)
    if (a.is_zero() || !one_scalar(p.aval_of(a))) return std::nullopt;
  switch (l.kind) {
    case Kind::unary: s.kind = ScalarStep::Kind::unary; return e.in.size() == 1 ? std::optional(s) : std::nullopt;
    case Kind::binary: s.kind = ScalarStep::Kind::binary; return e.in.size() == 2 ? std::optional(s) : std::nullopt;
    case Kind::convert: s.kind = ScalarStep::Kind::convert; return e.in.size() == 1 ? std::optional(s) : std::nullopt;
    case Kind::select: {
      s.kind = ScalarStep::Kind::select;
      const DType which = p.aval_of(e.in[0]).dtype;
      const bool ok = (which == DType::bool_ && e.in.size() == 3) || (which == DType::i32 && e.in.size() >= 3);
      return ok ? std::optional(s) : std::nullopt;
    }
    case Kind::broadcast: s.kind = ScalarStep::Kind::copy; return e.in.size() == 1 ? std::optional(s) : std::nullopt;
    default:
      if (e.prim->name != "reshape" || e.in.size() != 1) return std::nullopt;
      s.kind = ScalarStep::Kind::copy;
      return s;
  }
}

/// The merged equation of `members` (in program order), run where the last one was: its inputs
/// are the atoms the members read from outside, each once; its results every member's.
Eqn merged(const Program& p, const std::vector<std::size_t>& members, std::vector<ScalarStep> steps) {
  auto params = std::make_shared<ScalarsParams>();
  auto program = std::make_shared<ScalarProgram>();
  Eqn e;
  e.prim = &scalars_primitive();
  std::vector<int> value_of_var(p.var_avals.size(), -1);  // a member's result -> its value number
  auto input_value = [&](const Atom& a) {  // an outside atom's value number: its place in e.in
    const auto at = std::find(e.in.begin(), e.in.end(), a);
    if (at != e.in.end()) return static_cast<int>(at - e.in.begin());
    e.in.push_back(a);
    program->inputs.push_back({p.aval_of(a).dtype, p.aval_of(a).size()});
    return static_cast<int>(e.in.size()) - 1;
  };
  // Inputs are numbered first, so member results are numbered once every input is known.
  std::vector<bool> member_result(p.var_avals.size(), false);
  for (std::size_t k : members) member_result[static_cast<std::size_t>(p.eqns[k].out[0])] = true;
  for (std::size_t k : members)
    for (const Atom& a : p.eqns[k].in)
      if (!a.is_var() || !member_result[static_cast<std::size_t>(a.index)]) input_value(a);
  for (std::size_t j = 0; j < members.size(); ++j)
    value_of_var[static_cast<std::size_t>(p.eqns[members[j]].out[0])] = static_cast<int>(e.in.size() + j);
  for (std::size_t j = 0; j < members.size(); ++j) {
    const Eqn& m = p.eqns[members[j]];
    ScalarStep& s = steps[j];
    for (const Atom& a : m.in)
      s.operands.push_back(a.is_var() && value_of_var[static_cast<std::size_t>(a.index)] >= 0
                               ? value_of_var[static_cast<std::size_t>(a.index)]
                               : input_value(a));
    program->steps.push_back(std::move(s));
    params->members.push_back(Eqn{m.prim, m.params, {}, {}});
    params->ops += concat(j ? "," : "", m.prim->name);
    e.out.push_back(m.out[0]);
    params->out_avals.push_back(p.var_avals[static_cast<std::size_t>(m.out[0])]);
  }
  params->program = std::move(program);
  e.params = std::move(params);
  return e;
}

}  // namespace

bool is_fused_scalars(const PrimitiveInfo& prim) { return &prim == &scalars_primitive(); }

const kernels::ScalarProgram* scalar_program_of(const PrimitiveInfo& prim, const ParamsRef& params) {
  return is_fused_scalars(prim) ? params.get<ScalarsParams>().program.get() : nullptr;
}

bool scalars_write_in_place(const PrimitiveInfo& prim, const ParamsRef& params, std::span<const std::size_t> operands,
                            std::size_t result) {
  if (!is_fused_scalars(prim)) return false;
  const std::vector<ScalarStep>& steps = params.get<ScalarsParams>().program->steps;
  for (std::size_t k = result + 1; k < steps.size(); ++k)
    for (int v : steps[k].operands)
      if (std::find(operands.begin(), operands.end(), static_cast<std::size_t>(v)) != operands.end()) return false;
  return result < steps.size();
}

void fuse_scalars_for_cuda(Program& p) {
  // A block's kernel parameter holds an address per input and per step: at most this many,
  // 4 KB, the parameter size every CUDA driver takes (a step counts its operands as inputs).
  constexpr std::size_t kMaxAddresses = 512;
  struct Block {
    std::vector<std::size_t> members;
    std::vector<ScalarStep> steps;
    std::size_t addresses = 0;  ///< at most: its steps and their operands
    std::size_t at = 0;  ///< where it runs: its last member's place, or, once closed, the place it had then
    bool open = true;    ///< no other equation read a member's result yet: it may still move later
  };
  constexpr std::size_t kNowhere = ~std::size_t{0};
  std::vector<Block> blocks;
  std::vector<int> block_of_var(p.var_avals.size(), -1);
  std::vector<std::size_t> defined_at(p.var_avals.size(), 0);  // inputs: before everything
  std::vector<int> block_of_eqn(p.eqns.size(), -1);
  auto close = [&](Block& b) {
    b.open = false;
    for (std::size_t m : b.members) defined_at[static_cast<std::size_t>(p.eqns[m].out[0])] = b.at;
  };
  // Whether equation e could run where closed block b runs: each operand defined before it, or by it.
  auto fits = [&](const Block& b, int index, const Eqn& e) {
    return std::all_of(e.in.begin(), e.in.end(), [&](const Atom& a) {
      if (!a.is_var()) return true;
      const auto v = static_cast<std::size_t>(a.index);
      return block_of_var[v] == index || ((block_of_var[v] < 0 || !blocks[static_cast<std::size_t>(block_of_var[v])].open) &&
                                              defined_at[v] < b.at);
    });
  };
  for (std::size_t k = 0; k < p.eqns.size(); ++k) {
    const Eqn& e = p.eqns[k];
    std::optional<ScalarStep> step = scalar_step(p, e);
    if (!step) {
      // It runs before the open block would (where its last member is): that block stays where it is.
      for (const Atom& a : e.in)
        if (a.is_var() && block_of_var[static_cast<std::size_t>(a.index)] >= 0) {
          Block& b = blocks[static_cast<std::size_t>(block_of_var[static_cast<std::size_t>(a.index)])];
          if (b.open) close(b);
        }
      for (int v : e.out) defined_at[static_cast<std::size_t>(v)] = k;
      continue;
    }
    // The open block, which moves here; else a closed one it can run in (its operands all there
    // already: a step counter's increment, a second bias correction); else a new block.
    const std::size_t addresses = 1 + e.in.size();
    auto room = [&](const Block& b) { return b.addresses + addresses <= kMaxAddresses; };
    if (!blocks.empty() && blocks.back().open && !room(blocks.back())) close(blocks.back());
    int index = !blocks.empty() && blocks.back().open ? static_cast<int>(blocks.size()) - 1 : -1;
    for (std::size_t b = 0; index < 0 && b < blocks.size(); ++b)
      if (room(blocks[b]) && fits(blocks[b], static_cast<int>(b), e)) index = static_cast<int>(b);
    if (index < 0) {
      index = static_cast<int>(blocks.size());
      blocks.emplace_back();
    }
    Block& b = blocks[static_cast<std::size_t>(index)];
    b.members.push_back(k);
    b.steps.push_back(*step);
    b.addresses += addresses;
    if (b.open) b.at = k;
    block_of_eqn[k] = index;
    block_of_var[static_cast<std::size_t>(e.out[0])] = index;
    defined_at[static_cast<std::size_t>(e.out[0])] = b.open ? kNowhere : b.at;
  }
  std::vector<Eqn> made(blocks.size());
  std::vector<int> block_at(p.eqns.size(), -1);
  for (std::size_t b = 0; b < blocks.size(); ++b)
    if (blocks[b].members.size() >= 2) {
      made[b] = merged(p, blocks[b].members, std::move(blocks[b].steps));
      block_at[blocks[b].at] = static_cast<int>(b);
    }
  std::vector<Eqn> out;
  out.reserve(p.eqns.size());
  for (std::size_t k = 0; k < p.eqns.size(); ++k) {
    const int b = block_of_eqn[k];
    if (b < 0 || blocks[static_cast<std::size_t>(b)].members.size() < 2) out.push_back(std::move(p.eqns[k]));
    if (block_at[k] >= 0) out.push_back(std::move(made[static_cast<std::size_t>(block_at[k])]));
  }
  p.eqns = std::move(out);
}

}  // namespace canopy::detail
