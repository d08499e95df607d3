// Elementwise fusion: maximal groups of elementwise equations of one output shape (f32 and bool
// values, operands of that shape, scalars or trailing-dimension rows (in a GPU program also
// leading-dimension columns: a value per row, broadcast along it), and random unit floats of
// one key, which each tile hashes itself) become one
// `fused_elementwise` equation whose kernel reads each input once and writes each escaping
// result once (kernels/cpu/loops/fused.cpp); sums of a group's values over trailing dims, leading
// dims or everything are outputs of its kernel too, taken as the tiles go by; log_softmax along
// the last axis is a step on whole rows (the tiles then hold whole rows).
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <tuple>

#include "../../core/array_impl.hpp"
#include "../../primitives/common.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cpu_fused.hpp"
#include "passes.hpp"

namespace canopy::detail {
namespace {

using kernels::BinaryOp;
using kernels::FusedInput;
using kernels::FusedProgram;
using kernels::FusedStep;
using kernels::UnaryOp;
using Kind = Lowering::Kind;

struct FusedParams {
  std::shared_ptr<const FusedProgram> program;
  std::string ops;  ///< the fused primitives' names, in order, for printing
  std::vector<Aval> out_avals;
  const void* identity() const { return program.get(); }
};

bool is_value_dtype(DType d) { return d == DType::f32 || d == DType::bool_; }

/// How an operand is read for each element of a fused kernel's output.
struct ReadMode {
  FusedInput::Mode mode = FusedInput::Mode::full;
  std::int64_t inner = 1;  ///< column: the output elements each operand element stands for
};

/// How an operand of shape `in` broadcast numpy-style into `out` is read, or nullopt if it cannot
/// be: whole, one scalar, a row along the trailing dims, or (in a GPU program) a column along the
/// leading dims (`in` has out's rank, its leading dims out's and the others 1).
std::optional<ReadMode> read_mode(const Shape& in, const Shape& out, bool gpu) {
  using Mode = FusedInput::Mode;
  if (in == out) return ReadMode{Mode::full};
  if (shape_size(in) == 1) return ReadMode{Mode::scalar};
  std::size_t lead = 0;  // numpy aligns shapes on the right; leading 1s of `in` read nothing
  while (lead < in.size() && in[lead] == 1) ++lead;
  std::size_t rank = in.size() - lead;
  bool row = rank <= out.size();
  for (std::size_t i = 0; i < rank && row; ++i) row = in[lead + i] == out[out.size() - rank + i];
  if (row) return ReadMode{Mode::row};
  if (!gpu || in.size() != out.size()) return std::nullopt;
  std::size_t k = 0;
  while (k < in.size() && in[k] == out[k]) ++k;
  std::int64_t inner = 1;
  for (std::size_t d = k; d < in.size(); ++d) {
    if (in[d] != 1) return std::nullopt;
    inner *= out[d];
  }
  return ReadMode{Mode::column, inner};
}

/// The shape a broadcast_in_dim's operand has as a numpy operand of its result: its dims where
/// broadcast_dimensions put them, 1 elsewhere (the same elements in the same order).
Shape broadcast_operand_shape(const Shape& in, const Shape& out, const std::vector<int>& dims) {
  Shape s;
  s.resize(out.size(), 1);
  for (std::size_t i = 0; i < dims.size() && i < in.size(); ++i) s[static_cast<std::size_t>(dims[i])] = in[i];
  return s;
}

/// How equation e reads operand `a` for each element of its result of shape `out`.
std::optional<ReadMode> operand_read(const Program& p, const Eqn& e, const Atom& a, const Shape& out, bool gpu) {
  const Shape& in = p.aval_of(a).shape;
  if (e.prim->lowering.kind == Lowering::Kind::broadcast && shape_size(in) != 1)
    return read_mode(broadcast_operand_shape(in, out, broadcast_dimensions_of(e.params_ref())), out, gpu);
  return read_mode(in, out, gpu);
}

/// Whether e compares two i32 operands.
bool is_int_comparison(const Program& p, const Eqn& e) {
  return e.prim->lowering.kind == Kind::binary && kernels::is_comparison(static_cast<BinaryOp>(e.prim->lowering.op)) &&
         e.in.size() == 2 && !e.in[0].is_zero() && !e.in[1].is_zero() && p.aval_of(e.in[0]).dtype == DType::i32 &&
         p.aval_of(e.in[1]).dtype == DType::i32;
}

/// Whether equation e can be a member of a fused group (of a GPU program: `gpu`).
bool fusible(const Program& p, const Eqn& e, bool gpu) {
  const Lowering& l = e.prim->lowering;
  if (l.kind == Kind::opaque || e.out.size() != 1) return false;
  if (gpu && l.kind == Kind::uniform01) return false;
  if (e.prim->lowering_applies && !e.prim->lowering_applies(e.params_ref())) return false;
  const Aval& out = p.var_avals[e.out[0]];
  if (!is_value_dtype(out.dtype) || out.size() == 0) return false;
  if (l.kind == Kind::uniform01) {  // one key, read as raw words; f32 out of the key's own shape
    if (e.in.size() != 1 || e.in[0].is_zero()) return false;
    const Aval& key = p.aval_of(e.in[0]);
    return key.dtype == DType::u32 && key.shape == Shape{2} && out.dtype == DType::f32;
  }
  // A GPU program's comparison of i32 operands (labels against class indices, as one_hot makes
  // them): their bits in registers, compared as i32 by an int_compare step.
  const bool ints = gpu && is_int_comparison(p, e);
  for (const Atom& a : e.in) {
    if (a.is_zero()) return false;
    if (!(ints || is_value_dtype(p.aval_of(a).dtype)) || !operand_read(p, e, a, out.shape, gpu)) return false;
  }
  switch (l.kind) {
    case Kind::unary: {
      auto op = static_cast<UnaryOp>(l.op);
      if (!kernels::cpu::fused_unary_supported(l.op)) return false;
      // Float functions on f32; logical_not on bool; is_finite f32 -> bool.
      DType in = p.aval_of(e.in[0]).dtype;
      if (op == UnaryOp::logical_not) return in == DType::bool_;
      if (op == UnaryOp::is_finite) return in == DType::f32;
      return in == DType::f32 && out.dtype == DType::f32;
    }
    case Kind::binary: {
      if (e.in.size() != 2) return false;
      auto op = static_cast<BinaryOp>(l.op);
      DType a = p.aval_of(e.in[0]).dtype, b = p.aval_of(e.in[1]).dtype;
      if (a != b) return false;
      switch (op) {
        case BinaryOp::eq: case BinaryOp::ne: case BinaryOp::lt: case BinaryOp::le: case BinaryOp::gt: case BinaryOp::ge:
          return out.dtype == DType::bool_;
        case BinaryOp::logical_and: case BinaryOp::logical_or: case BinaryOp::logical_xor:
        case BinaryOp::max: case BinaryOp::min:
          return true;  // on bools these are and/or on 0/1; on f32 max/min
        default:
          return a == DType::f32 && out.dtype == DType::f32;  // arithmetic on bools keeps its own kernel
      }
    }
    case Kind::select:
      return e.in.size() == 3 && p.aval_of(e.in[0]).dtype == DType::bool_ && p.aval_of(e.in[1]).dtype == out.dtype &&
             p.aval_of(e.in[2]).dtype == out.dtype;
    case Kind::convert: return e.in.size() == 1;
    case Kind::broadcast:  // of a scalar; in a GPU program also of a row or a column
      return e.in.size() == 1 && (p.aval_of(e.in[0]).size() == 1 || gpu);
    case Kind::log_softmax: {  // along the last axis, of f32 (the kernel's tiles hold whole rows)
      if (e.in.size() != 1 || !e.prim->reduction_axes || p.aval_of(e.in[0]).dtype != DType::f32 ||
          out.dtype != DType::f32 || out.shape.empty())
        return false;
      const std::vector<int> axes = e.prim->reduction_axes(e.params_ref());
      const int rank = static_cast<int>(out.shape.size());
      // Rows up to kMaxFusedRow elements: a tile holds whole rows, in every register; on a GPU up
      // to kMaxGpuRow, a thread's.
      return axes.size() == 1 && (axes[0] < 0 ? axes[0] + rank : axes[0]) == rank - 1 &&
             out.shape.back() <= (gpu ? kernels::kMaxGpuRow : kernels::kMaxFusedRow);
    }
    case Kind::uniform01:
    case Kind::reduction:
    case Kind::opaque: break;
  }
  return false;
}

using Reduce = kernels::FusedProgram::Output::Reduce;
struct Summation {
  Reduce reduce = Reduce::none;
  std::int64_t inner = 1;
  /// A GPU program's row sum: a row_sum step later members may read along its row (broadcast as
  /// a column), and an output where it escapes.
  bool step = false;
};

/// How a fused kernel can compute reduction `e` of a value of shape `shape` itself: a sum of f32
/// over trailing dims (rows), leading dims (columns) or all of them (one column), adding up more
/// than one element each; nullopt otherwise.
std::optional<Summation> summation(const Program& p, const Eqn& e, const Shape& shape) {
  const Lowering& l = e.prim->lowering;
  if (l.kind != Kind::reduction || static_cast<kernels::ReduceOp>(l.op) != kernels::ReduceOp::sum ||
      !e.prim->reduction_axes || e.in.size() != 1 || e.out.size() != 1 || !e.in[0].is_var())
    return std::nullopt;
  if (p.aval_of(e.in[0]).dtype != DType::f32 || p.var_avals[static_cast<std::size_t>(e.out[0])].dtype != DType::f32)
    return std::nullopt;
  const int rank = static_cast<int>(shape.size());
  std::vector<int> axes = e.prim->reduction_axes(e.params_ref());
  for (int& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (axes.empty() || axes.front() < 0 || axes.back() >= rank) return std::nullopt;
  const auto m = static_cast<int>(axes.size());
  const bool prefix = axes.front() == 0 && axes.back() == m - 1;
  const bool suffix = axes.front() == rank - m && axes.back() == rank - 1;
  std::int64_t reduced = 1, kept = 1;
  for (int d = 0; d < rank; ++d) (std::binary_search(axes.begin(), axes.end(), d) ? reduced : kept) *= shape[static_cast<std::size_t>(d)];
  if (reduced <= 1) return std::nullopt;  // a sum of one element each: the value itself
  if (prefix) return Summation{Reduce::columns, kept};  // everything: one column
  if (suffix) return Summation{Reduce::rows, reduced};
  return std::nullopt;
}

/// The group of equations fused into one kernel, in program order.
struct Group {
  std::vector<std::size_t> eqns;
  bool open = true;  ///< no equation outside the group has read its values yet
  int merged_into = -1;
  std::int64_t row_inner = 0;  ///< the rows its row sums run over (one row length per kernel)
  bool summing = false;  ///< closed to members by a sum it took, open to more sums of its values
};

int find(std::vector<Group>& groups, int g) {
  while (groups[static_cast<std::size_t>(g)].merged_into >= 0) g = groups[static_cast<std::size_t>(g)].merged_into;
  return g;
}

const PrimitiveInfo& fused_primitive();

/// Builds a fused equation's kernel program, member by member: each group value gets a register,
/// each atom from outside the group a load of an input.
class FusedBuilder {
 public:
  FusedBuilder(const Program& p, const Shape& shape, bool gpu)
      : p_(p), shape_(shape), gpu_(gpu), prog_(std::make_shared<FusedProgram>()) {
    fused_.prim = &fused_primitive();
    prog_->elements = shape_size(shape);
  }

  /// Adds member e (equation k): its step, and an output where its value escapes the group or it
  /// is a sum the kernel takes (in `sums`: computed, not stored; a row_sum step where members read
  /// it, `read_in_group`).
  void add(const Eqn& e, std::size_t k, const std::vector<bool>& escapes, const std::map<std::size_t, Summation>& sums,
           const std::vector<bool>& read_in_group) {
    ops_ << (ops_.tellp() > 0 ? "," : "") << e.prim->name;
    if (auto sum = sums.find(k); sum != sums.end()) {
      const int summed = reg_of_var_.at(e.in[0].index);
      if (sum->second.step && read_in_group[static_cast<std::size_t>(e.out[0])]) {
        prog_->row = sum->second.inner;
        reg_of_var_[e.out[0]] = add_step({FusedStep::Kind::row_sum, 0, summed});
        if (!escapes[static_cast<std::size_t>(e.out[0])]) return;
      }
      prog_->outputs.push_back({summed, DType::f32, sum->second.reduce, sum->second.inner});
      fused_.out.push_back(e.out[0]);
      return;
    }
    const int r = step(e);
    reg_of_var_[e.out[0]] = r;
    if (escapes[static_cast<std::size_t>(e.out[0])]) {
      prog_->outputs.push_back({r, p_.var_avals[e.out[0]].dtype});
      fused_.out.push_back(e.out[0]);
    }
  }

  /// The fused equation, its program planned (and built into machine code where `compile`).
  Eqn finish(bool compile) {
    kernels::cpu::plan_fused_program(*prog_);
    if (compile)
      if (const std::string why = kernels::cpu::compile_fused_program(*prog_); !why.empty()) {
        static std::once_flag said;
        std::call_once(said, [&] { log_message("jit: a fused kernel stays interpreted: " + why); });
      }
    std::vector<Aval> out_avals;
    for (int v : fused_.out) out_avals.push_back(p_.var_avals[static_cast<std::size_t>(v)]);
    fused_.params = std::make_shared<FusedParams>(FusedParams{std::move(prog_), ops_.str(), std::move(out_avals)});
    return std::move(fused_);
  }

 private:
  /// The register of member e's value: a new step, or an operand's register where e only
  /// broadcasts or converts bool to f32 (already 0/1).
  int step(const Eqn& e) {
    const Lowering& l = e.prim->lowering;
    switch (l.kind) {
      case Kind::unary: return add_step({FusedStep::Kind::unary, l.op, reg_for(e.in[0])});
      case Kind::binary: {
        const int a = reg_for(e.in[0]), b = reg_for(e.in[1]);
        const bool ints = is_int_comparison(p_, e);  // only in a GPU program (fusible)
        return add_step({ints ? FusedStep::Kind::int_compare : FusedStep::Kind::binary, l.op, a, b});
      }
      case Kind::select: {
        const int w = reg_for(e.in[0]), c0 = reg_for(e.in[1]), c1 = reg_for(e.in[2]);
        return add_step({FusedStep::Kind::select, 0, w, c0, c1});
      }
      case Kind::convert: {
        const int a = reg_for(e.in[0]);
        const bool to_bool = p_.var_avals[e.out[0]].dtype == DType::bool_ && p_.aval_of(e.in[0]).dtype == DType::f32;
        return to_bool ? add_step({FusedStep::Kind::to_bool, 0, a}) : a;
      }
      case Kind::broadcast: return reg_for(e.in[0], *operand_read(p_, e, e.in[0], shape_, gpu_));
      case Kind::uniform01: return add_step({FusedStep::Kind::uniform01, 0, reg_for(e.in[0], std::nullopt, true)});
      case Kind::log_softmax: prog_->row = shape_.back(); return add_step({FusedStep::Kind::log_softmax, 0, reg_for(e.in[0])});
      case Kind::reduction:
      case Kind::opaque: break;
    }
    return -1;
  }

  int add_step(FusedStep s) {
    prog_->steps.push_back(s);
    return static_cast<int>(prog_->steps.size()) - 1;
  }

  /// The register holding atom a: a group value's, or the load of a as an input, read as `how`
  /// (numpy broadcasting of its own shape where not given; its raw words for a random key:
  /// `words`), added on first use.
  int reg_for(const Atom& a, std::optional<ReadMode> how = std::nullopt, bool words = false) {
    if (a.is_var())
      if (auto it = reg_of_var_.find(a.index); it != reg_of_var_.end()) return it->second;
    const Aval& in = p_.aval_of(a);
    const ReadMode mode = words ? ReadMode{FusedInput::Mode::words} : how ? *how : *read_mode(in.shape, shape_, gpu_);
    // One load per atom and way of reading it (a [4] vector may be a row and a column of [4, 4]).
    auto key = std::make_tuple(a.kind, a.index, mode.mode, mode.inner);
    if (auto it = reg_of_input_.find(key); it != reg_of_input_.end()) return it->second;
    prog_->inputs.push_back({mode.mode, in.dtype, in.size(), mode.inner});
    fused_.in.push_back(a);
    const int r = add_step({FusedStep::Kind::load, 0, static_cast<int>(prog_->inputs.size()) - 1});
    reg_of_input_.emplace(key, r);
    return r;
  }

  const Program& p_;
  const Shape& shape_;
  bool gpu_;
  std::shared_ptr<FusedProgram> prog_;
  Eqn fused_;
  std::map<int, int> reg_of_var_;                          ///< group value -> register
  std::map<std::tuple<Atom::Kind, int, FusedInput::Mode, std::int64_t>, int> reg_of_input_;  ///< (atom, how read) -> load register
  std::ostringstream ops_;
};

/// The fused equation of `members` (in order): the kernel program, its inputs and escaping outputs.
Eqn build_fused(const Program& p, const std::vector<std::size_t>& members, const std::vector<bool>& escapes,
                const std::map<std::size_t, Summation>& sums, bool gpu, bool compile) {
  FusedBuilder builder(p, p.var_avals[p.eqns[members[0]].out[0]].shape, gpu);
  // The values the members read: a row sum only they do not read is an output alone, not a step.
  std::vector<bool> read(p.var_avals.size(), false);
  for (std::size_t k : members)
    for (const Atom& a : p.eqns[k].in)
      if (a.is_var()) read[static_cast<std::size_t>(a.index)] = true;
  for (std::size_t k : members) builder.add(p.eqns[k], k, escapes, sums, read);
  return builder.finish(compile);
}

template <bool gpu>
void run_fused(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const FusedProgram& prog = *params.get<FusedParams>().program;
  std::vector<const void*> src;
  std::vector<void*> dst;
  for (const Array& a : in) src.push_back(cdata(a));
  for (const Array& a : out) dst.push_back(mutable_data(a));
  if constexpr (gpu) kernels::cuda::fused_elementwise(prog, src, dst, prog.elements, out[0].device().index);
  else kernels::cpu::fused_elementwise(prog, src, dst, prog.elements);
}

const PrimitiveInfo& fused_primitive() {
  static const PrimitiveInfo info = [] {
    PrimitiveInfo i = pass_primitive<FusedParams>("fused_elementwise", run_fused<false>);
    i.kernels.set(Device::Kind::cuda, run_fused<true>);
    // Its sums add up in an order of each device's own, and so do the values row_sum steps feed.
    i.accumulating_output = [](const ParamsRef& params, std::size_t output) {
      const FusedProgram& p = *params.get<FusedParams>().program;
      const bool row_sums = std::any_of(p.steps.begin(), p.steps.end(), [](const FusedStep& s) { return s.kind == FusedStep::Kind::row_sum; });
      return output < p.outputs.size() && (row_sums || p.outputs[output].reduce != FusedProgram::Output::Reduce::none);
    };
    return i;
  }();
  return info;
}

}  // namespace

bool is_fused_elementwise(const PrimitiveInfo& prim) { return &prim == &fused_primitive(); }
bool fused_writes_elementwise(const PrimitiveInfo& prim, const ParamsRef& params, std::size_t result) {
  if (!is_fused_elementwise(prim)) return false;
  const FusedProgram& p = *params.get<FusedParams>().program;
  return result < p.outputs.size() && p.outputs[result].reduce == FusedProgram::Output::Reduce::none;
}
const kernels::FusedProgram* fused_program_of(const PrimitiveInfo& prim, const ParamsRef& params) {
  return is_fused_elementwise(prim) ? params.get<FusedParams>().program.get() : nullptr;
}

namespace {

/// The elements from which a lone elementwise op of a GPU program runs as a generated kernel.
constexpr std::int64_t kLoneFusedElements = std::int64_t{1} << 18;

/// The fused groups of a program, found in one walk over its equations in order (add), and the
/// equations that replace it (fused_equations).
class Grouping {
 public:
  Grouping(Program& p, bool gpu)
      : p_(p), gpu_(gpu), group_of_eqn_(p.eqns.size(), -1), group_of_var_(p.var_avals.size(), -1),
        summed_(p.var_avals.size(), false) {}

  /// Equation k: a member of a group where it can be one, or a sum a group's kernel takes (on a
  /// GPU, a row sum as a step of it); a group whose value an outsider reads is closed: a later
  /// member could depend on that outsider.
  void add(std::size_t k) {
    const Eqn& e = p_.eqns[k];
    const int mine = fusible(p_, e, gpu_) ? join(k) : -1;
    if (mine < 0 && (gpu_ ? take_row_sum_step(k) : take_sum(k))) return;
    for (const Atom& a : e.in) {
      if (!a.is_var() || group_of_var_[a.index] < 0) continue;
      const int g = find(groups_, group_of_var_[a.index]);
      if (g != mine) groups_[static_cast<std::size_t>(g)].open = groups_[static_cast<std::size_t>(g)].summing = false;
    }
  }

  /// The program's equations with each group of two or more replaced by its fused equation, run
  /// where its last member was; in a GPU program also a lone elementwise op over
  /// kLoneFusedElements or more. In a GPU program, a group the GPU's fused kernel cannot hold
  /// (more outputs than it takes) keeps its equations as they were.
  std::vector<Eqn> fused_equations() {
    const std::vector<bool> escapes = escaping_values();
    std::vector<std::optional<Eqn>> fused(groups_.size());
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      std::vector<std::size_t>& members = groups_[g].eqns;
      if (members.size() < 2 && !(members.size() == 1 && lone_kernel_pays(groups_[g]))) continue;
      std::sort(members.begin(), members.end());
      Eqn f = build_fused(p_, members, escapes, sums_, gpu_, !gpu_ && fused_codegen());
      if (!gpu_ || kernels::cuda::fused_supported(*f.params_ref().get<FusedParams>().program)) fused[g] = std::move(f);
    }
    std::vector<Eqn> out;
    out.reserve(p_.eqns.size());
    for (std::size_t k = 0; k < p_.eqns.size(); ++k) {
      const int g = group_of_eqn(k);
      if (g < 0 || !fused[static_cast<std::size_t>(g)]) out.push_back(std::move(p_.eqns[k]));
      else if (k == groups_[static_cast<std::size_t>(g)].eqns.back()) out.push_back(std::move(*fused[static_cast<std::size_t>(g)]));
    }
    return out;
  }

 private:
  /// Whether a group of one equation runs faster as a generated kernel than as its op's own: on a
  /// GPU, a plain elementwise op (no row step, no sum) over kLoneFusedElements or more, which the
  /// generated kernel reads and writes 128 bits at a time where the op's kernel takes an element a
  /// thread (a relu over a CNN's activations).
  bool lone_kernel_pays(const Group& G) const {
    const std::size_t k = G.eqns.front();
    const Eqn& e = p_.eqns[k];
    return gpu_ && G.row_inner == 0 && !sums_.contains(k) && e.prim->lowering.kind != Kind::log_softmax &&
           p_.var_avals[static_cast<std::size_t>(e.out[0])].size() >= kLoneFusedElements;
  }

  /// Puts fusible equation k into the open groups of its shape it reads (two or more become one,
  /// run where k is), or into a new group; returns its group. In a GPU program, an equation
  /// reading a row sum other than along its rows (a column of the group's shape) does not join
  /// that sum's group: it reads the sum from outside.
  int join(std::size_t k) {
    const Eqn& e = p_.eqns[k];
    const Shape& shape = p_.var_avals[e.out[0]].shape;
    std::vector<int> barred;  // groups whose row sum e reads other than along the rows
    for (const Atom& a : e.in)
      if (gpu_ && a.is_var() && summed_[static_cast<std::size_t>(a.index)] && group_of_var_[a.index] >= 0) {
        const int g = find(groups_, group_of_var_[a.index]);
        const auto how = operand_read(p_, e, a, shape, gpu_);
        if (!how || how->mode != FusedInput::Mode::column || how->inner != groups_[static_cast<std::size_t>(g)].row_inner ||
            shape_of(groups_[static_cast<std::size_t>(g)]) != shape)
          barred.push_back(g);
      }
    // A kernel's row steps and row sums share one row length (its tiles hold whole rows).
    std::int64_t row = e.prim->lowering.kind == Kind::log_softmax ? shape.back() : 0;
    auto fits = [](std::int64_t a, std::int64_t b) { return a == 0 || b == 0 || a == b; };
    int mine = -1;
    for (const Atom& a : e.in) {
      if (!a.is_var() || group_of_var_[a.index] < 0) continue;
      const int g = find(groups_, group_of_var_[a.index]);
      Group& G = groups_[static_cast<std::size_t>(g)];
      if (!G.open || shape_of(G) != shape || g == mine || !fits(row, G.row_inner) ||
          std::find(barred.begin(), barred.end(), g) != barred.end())
        continue;
      row = std::max(row, G.row_inner);
      if (mine < 0) {
        mine = g;
      } else {
        Group& M = groups_[static_cast<std::size_t>(mine)];
        M.eqns.insert(M.eqns.end(), G.eqns.begin(), G.eqns.end());
        G.eqns.clear();
        G.merged_into = mine;
      }
    }
    if (mine < 0) {
      groups_.push_back({});
      mine = static_cast<int>(groups_.size()) - 1;
    }
    groups_[static_cast<std::size_t>(mine)].eqns.push_back(k);
    groups_[static_cast<std::size_t>(mine)].row_inner = row;
    group_of_eqn_[k] = mine;
    group_of_var_[e.out[0]] = mine;
    return mine;
  }

  /// Makes equation k, where it is a sum of an open group's value, one of the group's outputs,
  /// computed as the kernel goes; whether it did. The group then runs where the sum stood, so no
  /// member may join after it; more sums may, until something outside reads one of its values or
  /// sums.
  bool take_sum(std::size_t k) {
    const Eqn& e = p_.eqns[k];
    if (e.in.size() != 1 || !e.in[0].is_var() || group_of_var_[e.in[0].index] < 0 ||
        summed_[static_cast<std::size_t>(e.in[0].index)])  // a member's value, not another sum
      return false;
    const int g = find(groups_, group_of_var_[e.in[0].index]);
    Group& G = groups_[static_cast<std::size_t>(g)];
    const auto sum = G.open || G.summing ? summation(p_, e, shape_of(G)) : std::nullopt;
    if (!sum || (sum->reduce == Reduce::rows && G.row_inner != 0 && G.row_inner != sum->inner)) return false;
    if (sum->reduce == Reduce::rows) G.row_inner = sum->inner;
    G.eqns.push_back(k);
    G.open = false;
    G.summing = true;
    group_of_eqn_[k] = g;
    group_of_var_[e.out[0]] = g;  // a reader of the sum closes the group to further sums
    summed_[static_cast<std::size_t>(e.out[0])] = true;
    sums_.emplace(k, *sum);
    return true;
  }

  /// For a GPU program: makes equation k, where it is a sum over rows of at most kMaxGpuRow
  /// elements of an open group's value, a row_sum step of the group (which stays open: later
  /// members may read the sum along its rows; an output where it escapes); whether it did.
  bool take_row_sum_step(std::size_t k) {
    const Eqn& e = p_.eqns[k];
    if (e.in.size() != 1 || !e.in[0].is_var() || group_of_var_[e.in[0].index] < 0 ||
        summed_[static_cast<std::size_t>(e.in[0].index)])  // a member's value of the group's shape
      return false;
    const int g = find(groups_, group_of_var_[e.in[0].index]);
    Group& G = groups_[static_cast<std::size_t>(g)];
    if (!G.open) return false;
    auto sum = summation(p_, e, shape_of(G));
    if (!sum || sum->reduce != Reduce::rows || sum->inner > kernels::kMaxGpuRow ||
        (G.row_inner != 0 && G.row_inner != sum->inner))
      return false;
    sum->step = true;
    G.row_inner = sum->inner;
    G.eqns.push_back(k);
    group_of_eqn_[k] = g;
    group_of_var_[e.out[0]] = g;
    summed_[static_cast<std::size_t>(e.out[0])] = true;
    sums_.emplace(k, *sum);
    return true;
  }

  /// Per variable: whether it escapes its group, read by an equation outside it or by the
  /// program's outputs.
  std::vector<bool> escaping_values() {
    std::vector<bool> escapes(p_.var_avals.size(), false);
    for (const Atom& a : p_.outs)
      if (a.is_var()) escapes[a.index] = true;
    for (std::size_t k = 0; k < p_.eqns.size(); ++k) {
      const int mine = group_of_eqn(k);
      for (const Atom& a : p_.eqns[k].in)
        if (a.is_var() && group_of_var_[a.index] >= 0 && find(groups_, group_of_var_[a.index]) != mine) escapes[a.index] = true;
    }
    return escapes;
  }

  int group_of_eqn(std::size_t k) { return group_of_eqn_[k] >= 0 ? find(groups_, group_of_eqn_[k]) : -1; }
  /// The shape of a group's values (its first member's).
  const Shape& shape_of(const Group& g) const { return p_.var_avals[p_.eqns[g.eqns[0]].out[0]].shape; }

  Program& p_;
  bool gpu_;
  std::vector<Group> groups_;
  std::vector<int> group_of_eqn_, group_of_var_;
  std::map<std::size_t, Summation> sums_;  ///< reduction equations computed by their group's kernel
  std::vector<bool> summed_;               ///< their results
};

}  // namespace

void fuse_groups(Program& p, bool gpu) {
  Grouping grouping(p, gpu);
  for (std::size_t k = 0; k < p.eqns.size(); ++k) grouping.add(k);
  p.eqns = grouping.fused_equations();
}

void fuse_elementwise(Program& p) { fuse_groups(p, false); }
void fuse_elementwise_for_cuda(Program& p) { fuse_groups(p, true); }

}  // namespace canopy::detail
