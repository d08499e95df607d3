// Horizontal fusion for GPUs: fused elementwise equations that run one program over operands of
// different lengths (an optimizer's update of each parameter leaf, the same chain applied to each
// layer) and that do not read each other's results become one `fused_elementwise_segments`
// equation, one kernel launch instead of one per leaf. On a GPU a launch of a small elementwise
// kernel costs about as much as its work, so a step's tail of per-leaf updates is paid once.
#include <algorithm>

#include "../../core/array_impl.hpp"
#include "canopy/kernels/cpu_fused.hpp"
#include "canopy/kernels/cuda.hpp"
#include "passes.hpp"

namespace canopy::detail {
namespace {

using kernels::FusedInput;
using kernels::FusedProgram;

struct SegmentsParams {
  std::vector<std::shared_ptr<const void>> members;  ///< the merged equations' params: they own the programs
  std::vector<const FusedProgram*> programs;         ///< per segment
  std::string ops;
  std::vector<Aval> out_avals;
  const void* identity() const { return programs.front(); }
};

/// Runs each segment's program over its operands, in order (in and out hold every segment's
/// operands one segment after another).
template <bool gpu>
void run_segments(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const SegmentsParams& s = params.get<SegmentsParams>();
  std::vector<const void*> src;
  std::vector<void*> dst;
  for (const Array& a : in) src.push_back(cdata(a));
  for (const Array& a : out) dst.push_back(mutable_data(a));
  if constexpr (gpu) {
    kernels::cuda::fused_elementwise_segments(s.programs, src, dst, out[0].device().index);
  } else {
    std::size_t i = 0, o = 0;
    for (const FusedProgram* p : s.programs) {
      kernels::cpu::fused_elementwise(*p, std::span(src).subspan(i, p->inputs.size()),
                                      std::span(dst).subspan(o, p->outputs.size()), p->elements);
      i += p->inputs.size();
      o += p->outputs.size();
    }
  }
}

const PrimitiveInfo& segments_primitive() {
  static const PrimitiveInfo info = [] {
    PrimitiveInfo i = pass_primitive<SegmentsParams>("fused_elementwise_segments", run_segments<false>);
    i.kernels.set(Device::Kind::cuda, run_segments<true>);
    return i;
  }();
  return info;
}

/// Whether a and b are one program but for the elements they run over (and so one kernel): the
/// same inputs (a full input's length is the program's), steps and outputs, and both vectorizable
/// or both not (4 elements or more).
bool same_but_length(const FusedProgram& a, const FusedProgram& b) {
  if (a.inputs.size() != b.inputs.size() || a.steps.size() != b.steps.size() || a.outputs.size() != b.outputs.size() ||
      a.row != b.row || (a.elements >= 4) != (b.elements >= 4))
    return false;
  for (std::size_t k = 0; k < a.inputs.size(); ++k) {
    const FusedInput &x = a.inputs[k], &y = b.inputs[k];
    // What a kernel's source holds of an input: a row's length, a column's run (not its length).
    if (x.mode != y.mode || x.dtype != y.dtype || (x.mode == FusedInput::Mode::row && x.size != y.size) ||
        (x.mode == FusedInput::Mode::column && x.inner != y.inner))
      return false;
  }
  for (std::size_t k = 0; k < a.steps.size(); ++k) {
    const auto &x = a.steps[k], &y = b.steps[k];
    if (x.kind != y.kind || x.op != y.op || x.a != y.a || x.b != y.b || x.c != y.c) return false;
  }
  for (std::size_t k = 0; k < a.outputs.size(); ++k) {
    const auto &x = a.outputs[k], &y = b.outputs[k];
    if (x.reg != y.reg || x.dtype != y.dtype || x.reduce != y.reduce || x.inner != y.inner) return false;
  }
  return true;
}

/// The merged equation of `members` (in program order), run where the last one was.
Eqn merged(const Program& p, const std::vector<std::size_t>& members) {
  auto s = std::make_shared<SegmentsParams>();
  Eqn e;
  e.prim = &segments_primitive();
  for (std::size_t k : members) {
    const Eqn& m = p.eqns[k];
    s->members.push_back(m.params);
    s->programs.push_back(fused_program_of(*m.prim, m.params_ref()));
    e.in.insert(e.in.end(), m.in.begin(), m.in.end());
    for (int v : m.out) {
      e.out.push_back(v);
      s->out_avals.push_back(p.var_avals[static_cast<std::size_t>(v)]);
    }
  }
  const Eqn& first = p.eqns[members.front()];
  std::string ops = first.prim->params_to_string(first.params_ref());
  if (ops.rfind("ops=", 0) == 0) ops.erase(0, 4);
  s->ops = std::to_string(members.size()) + "x(" + ops + ")";
  e.params = std::move(s);
  return e;
}

}  // namespace

bool is_fused_segments(const PrimitiveInfo& prim) { return &prim == &segments_primitive(); }

bool segments_write_in_place(const PrimitiveInfo& prim, const ParamsRef& params, std::span<const std::size_t> operands,
                             std::size_t result) {
  if (!is_fused_segments(prim)) return false;
  const SegmentsParams& s = params.get<SegmentsParams>();
  // The segment of result `result`, and the operand positions that segment reads.
  std::size_t first_in = 0, first_out = 0;
  for (const FusedProgram* p : s.programs) {
    if (result < first_out + p->outputs.size())
      return std::all_of(operands.begin(), operands.end(),
                         [&](std::size_t at) { return at >= first_in && at < first_in + p->inputs.size(); });
    first_in += p->inputs.size();
    first_out += p->outputs.size();
  }
  return false;
}

std::span<const kernels::FusedProgram* const> segment_programs_of(const PrimitiveInfo& prim, const ParamsRef& params) {
  if (!is_fused_segments(prim)) return {};
  return params.get<SegmentsParams>().programs;
}

void fuse_segments_for_cuda(Program& p) {
  struct Batch {
    std::vector<std::size_t> members;
    const FusedProgram* program = nullptr;
    bool open = true;  ///< no equation read a member's result yet: a later equation may join
  };
  std::vector<Batch> batches;
  std::vector<int> batch_of_var(p.var_avals.size(), -1);
  std::vector<int> batch_of_eqn(p.eqns.size(), -1);
  for (std::size_t k = 0; k < p.eqns.size(); ++k) {
    const Eqn& e = p.eqns[k];
    // A reader of a member's result runs before the batch would (where its last member is), and
    // may feed a later member: the batch takes no more members.
    for (const Atom& a : e.in)
      if (a.is_var() && batch_of_var[a.index] >= 0) batches[static_cast<std::size_t>(batch_of_var[a.index])].open = false;
    const FusedProgram* prog = fused_program_of(*e.prim, e.params_ref());
    if (!prog || kernels::fused_segments_capacity(*prog) < 2) continue;
    auto joins = [&](const Batch& b) {
      return b.open && b.members.size() < static_cast<std::size_t>(kernels::fused_segments_capacity(*prog)) &&
             same_but_length(*b.program, *prog);
    };
    auto it = std::find_if(batches.begin(), batches.end(), joins);
    if (it == batches.end()) it = batches.insert(batches.end(), Batch{{}, prog});
    it->members.push_back(k);
    const int b = static_cast<int>(it - batches.begin());
    batch_of_eqn[k] = b;
    for (int v : e.out) batch_of_var[static_cast<std::size_t>(v)] = b;
  }
  std::vector<Eqn> out;
  out.reserve(p.eqns.size());
  for (std::size_t k = 0; k < p.eqns.size(); ++k) {
    const int b = batch_of_eqn[k];
    if (b < 0 || batches[static_cast<std::size_t>(b)].members.size() < 2) out.push_back(std::move(p.eqns[k]));
    else if (k == batches[static_cast<std::size_t>(b)].members.back()) out.push_back(merged(p, batches[static_cast<std::size_t>(b)].members));
  }
  p.eqns = std::move(out);
}

}  // namespace canopy::detail
