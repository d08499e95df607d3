// C++ source for a fused elementwise program (the generated-code form of loops/fused.cpp): one
// function that runs every step of an element in registers, 16 lanes at a time, with the values
// of the interpreter bit for bit. That holds because the source does what the interpreter's
// compiled code does: nothing is contracted across steps (built with -ffp-contract=off), the
// rational tanh's multiply-adds are fused exactly where GCC fuses them in the interpreter's code
// for the same instruction set, vector math comes from the same libmvec variants, a partial last
// block is padded to 16 lanes, and steps of scalars run once on a padded block as the
// interpreter runs them. An op is written inline where this file has a spelling of it (the speed
// table, spellings.cpp); any other op runs as the interpreter runs it, a 16-lane loop of the library's own
// element math (math::unary_<name>, math::binary_<name>, whose headers the source embeds) in a
// function of its own, so a new op of the lists needs nothing here. Programs with steps it does
// not write (random streams, row steps, sums, rows) get no source: the interpreter runs them.
#include "fused_codegen.hpp"

#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "canopy/kernels/ops.hpp"
#include "embedded_headers.hpp"

namespace canopy::kernels::cpu::codegen {
namespace {

using Kind = FusedStep::Kind;
using Mode = FusedInput::Mode;

/// The embedded element math headers as one text for the system compiler: each header's own
/// includes of canopy headers and #pragma once dropped (they are all here, in include order),
/// its standard library includes kept.
const std::string& element_math_prelude() {
  static const std::string text = concatenated(kEmbeddedHeaders, kEmbeddedHeaderCount, true);
  return text;
}

std::string reg(int r) { return cat({"r", std::to_string(r)}); }
std::string reg(std::size_t r) { return reg(static_cast<int>(r)); }
const char* storage_type(DType d) { return d == DType::f32 ? "float" : "unsigned char"; }

/// Whether the generator writes `p`: full and scalar inputs, outputs written element by element,
/// no row steps, and only loads, unary and binary ops, selects and bool conversions.
bool writable(const FusedProgram& p) {
  for (const FusedInput& in : p.inputs)
    if ((in.mode != Mode::full && in.mode != Mode::scalar) || in.dtype == DType::i32) return false;
  for (const auto& o : p.outputs)
    if (o.reduce != FusedProgram::Output::Reduce::none) return false;
  if (p.row > 0) return false;
  for (const FusedStep& s : p.steps)
    if (s.kind == Kind::uniform01 || s.kind == Kind::log_softmax || s.kind == Kind::row_sum || s.kind == Kind::int_compare)
      return false;
  return true;
}

/// How the lanes of one block of 16 are addressed: the lane loop's header, the expressions of an
/// input element, of the lane (0..15) and of an output element.
struct Lanes {
  std::string header, index, in_suffix, lane, out_suffix, out_index;
};

/// The writer of one program's source.
class Writer {
 public:
  Writer(const FusedProgram& p, Isa isa) : p_(p), isa_(isa), n_(p.steps.size()), scalar_(n_), slow_(n_), segment_(n_) {
    classify();
  }
  std::string source();

 private:
  void classify();
  void plan_segments();
  std::vector<int> operands(std::size_t k) const;
  std::string load_value(std::size_t k, const std::string& index, const std::string& suffix) const;
  std::string expression(std::size_t k) const;
  std::string slow_function_name(std::size_t k) const;
  std::string slow_call(std::size_t k, const std::string& lanes_suffix) const;
  std::string lanes_of(int r) const;
  void header();
  void slow_functions();
  void prologue();
  void scalar_step(std::size_t k);
  void block(const Lanes& at);
  void segment(const Lanes& at, int s);
  void kernel(bool streaming);
  void kernel_pointers();
  void streaming_start();
  void partial_block();
  void stream_macro();

  const FusedProgram& p_;
  Isa isa_;
  std::size_t n_;
  std::vector<bool> scalar_;  ///< per register: holds one value (loads of scalars, steps of scalars only)
  std::vector<bool> slow_;    ///< per step: an op without a spelling, run through the element math
  std::vector<int> segment_;  ///< per full register: the lane loop it is defined in (or, slow, first read in)
  std::vector<bool> lanes_;   ///< per full register: kept in an array of its 16 lanes between lane loops
  int segments_ = 1;
  std::ostringstream src_;
};

/// The registers step k reads.
std::vector<int> Writer::operands(std::size_t k) const {
  const FusedStep& s = p_.steps[k];
  switch (s.kind) {
    case Kind::load: return {};
    case Kind::binary: return {s.a, s.b};
    case Kind::select: return {s.a, s.b, s.c};
    default: return {s.a};
  }
}

void Writer::classify() {
  for (std::size_t k = 0; k < n_; ++k) {
    const FusedStep& s = p_.steps[k];
    if (s.kind == Kind::load) {
      scalar_[k] = p_.inputs[static_cast<std::size_t>(s.a)].mode == Mode::scalar;
      continue;
    }
    bool all_scalar = true;
    for (int r : operands(k)) all_scalar = all_scalar && scalar_[static_cast<std::size_t>(r)];
    scalar_[k] = all_scalar;
    slow_[k] = (s.kind == Kind::unary && !fast_unary(static_cast<UnaryOp>(s.op), "x")) ||
               (s.kind == Kind::binary && !fast_binary(static_cast<BinaryOp>(s.op), "a", "b"));
  }
  plan_segments();
}

/// Lane loops: a slow step of full registers ends one (its operands' lanes go into arrays, its
/// function fills its own) and the next reads it; a register read in a later loop than its own,
/// or by a slow step, is kept in an array of its lanes.
void Writer::plan_segments() {
  int s = 0;
  for (std::size_t k = 0; k < n_; ++k)
    if (!scalar_[k]) segment_[k] = slow_[k] ? ++s : s;
  segments_ = s + 1;
  lanes_.assign(n_, false);
  auto read_in = [&](int r, int at) {
    const auto u = static_cast<std::size_t>(r);
    if (!scalar_[u] && (slow_[u] || segment_[u] != at)) lanes_[u] = true;
  };
  for (std::size_t k = 0; k < n_; ++k) {
    if (scalar_[k] || p_.steps[k].kind == Kind::load) continue;
    for (int r : operands(k)) {
      if (slow_[k] && !scalar_[static_cast<std::size_t>(r)]) lanes_[static_cast<std::size_t>(r)] = true;
      if (!slow_[k]) read_in(r, segment_[k]);
    }
  }
  for (const auto& o : p_.outputs) read_in(o.reg, segments_ - 1);
  for (std::size_t k = 0; k < n_; ++k) lanes_[k] = lanes_[k] || (slow_[k] && !scalar_[k]);
}

/// Load step k's element `index` of its input (`suffix`: the input's padded copy).
std::string Writer::load_value(std::size_t k, const std::string& index, const std::string& suffix) const {
  const FusedStep& s = p_.steps[k];
  const FusedInput& in = p_.inputs[static_cast<std::size_t>(s.a)];
  const std::string i = in.mode == Mode::scalar ? "0" : index;
  const std::string ptr = cat({"in", std::to_string(s.a), in.mode == Mode::full ? suffix : ""});
  return cat({in.dtype == DType::f32 ? "" : "(float)", ptr, "[", i, "]"});
}

/// The value of step k (not a load, not slow) as an expression of the registers before it.
std::string Writer::expression(std::size_t k) const {
  const FusedStep& s = p_.steps[k];
  switch (s.kind) {
    case Kind::unary: return *fast_unary(static_cast<UnaryOp>(s.op), reg(s.a));
    case Kind::binary: return *fast_binary(static_cast<BinaryOp>(s.op), reg(s.a), reg(s.b));
    case Kind::select: return cat({"(", reg(s.a), " > 0 ? ", reg(s.c), " : ", reg(s.b), ")"});
    case Kind::to_bool: return cat({"(", reg(s.a), " != 0 ? 1.0f : 0.0f)"});
    default: return "0";
  }
}

/// The 16-lane function of slow step k's op: "unary_floor_16".
std::string Writer::slow_function_name(std::size_t k) const {
  const FusedStep& s = p_.steps[k];
  return s.kind == Kind::unary ? cat({"unary_", op_name(static_cast<UnaryOp>(s.op)), "_16"})
                               : cat({"binary_", op_name(static_cast<BinaryOp>(s.op)), "_16"});
}

/// Register r's array of 16 lanes: s<r> for a scalar (the prologue's), r<r>_lanes otherwise.
std::string Writer::lanes_of(int r) const {
  return scalar_[static_cast<std::size_t>(r)] ? cat({"s", std::to_string(r)}) : cat({reg(r), "_lanes"});
}

/// The call of slow step k's function on its operands' lanes, into `result`.
std::string Writer::slow_call(std::size_t k, const std::string& result) const {
  std::string args;
  for (int r : operands(k)) args += lanes_of(r) + ", ";
  return cat({slow_function_name(k), "(", args, result, ");\n"});
}
// ---- The source, part by part.

void Writer::header() {
  bool slow = false, tanh = false;
  for (std::size_t k = 0; k < n_; ++k) {
    slow = slow || slow_[k];
    tanh = tanh || (p_.steps[k].kind == Kind::unary && static_cast<UnaryOp>(p_.steps[k].op) == UnaryOp::tanh);
  }
  src_ << "// A fused elementwise program of canopy, generated; built with -ffp-contract=off.\n";
  if (slow) src_ << element_math_prelude();
  src_ << (isa_ == Isa::avx512 ? "#define MADD(a, b, c) __builtin_fmaf(a, b, c)\n" : "#define MADD(a, b, c) ((a) * (b) + (c))\n");
  src_ << "extern \"C\" {\n";
  for (const char* f : vector_math_functions()) src_ << "__attribute__((simd(\"notinbranch\"))) float " << f << "(float) noexcept;\n";
  src_ << "}\n";
  if (tanh) src_ << kTanhRational;
  slow_functions();
}

/// Each slow op's function, once: as the interpreter runs the op, a loop of 16 lanes of the
/// element math compiled as the library's loops are (its multiply-adds fused where GCC fuses
/// them there; the rest of the source fuses nothing, so that steps stay apart).
void Writer::slow_functions() {
  std::set<std::string> written;
  for (std::size_t k = 0; k < n_; ++k) {
    if (!slow_[k] || !written.insert(slow_function_name(k)).second) continue;
    const FusedStep& s = p_.steps[k];
    const bool unary = s.kind == Kind::unary;
    const std::string math = unary ? cat({"unary_", op_name(static_cast<UnaryOp>(s.op))})
                                   : cat({"binary_", op_name(static_cast<BinaryOp>(s.op))});
    src_ << "__attribute__((noinline, optimize(\"fp-contract=fast\"))) static void " << slow_function_name(k)
         << (unary ? "(const float* x, float* y) {\n" : "(const float* a, const float* b, float* y) {\n")
         << "#pragma omp simd\n  for (int lane = 0; lane < 16; ++lane)\n    y[lane] = (float)canopy::kernels::math::" << math
         << (unary ? "(x[lane]);\n}\n" : "(a[lane], b[lane]);\n}\n");
  }
}

/// The scalar registers, once per call: loads, then steps of scalars, each step on a block of 16
/// equal lanes (the vector math's value, as the interpreter's padded block gives).
void Writer::prologue() {
  bool lanes = false;  // whether scalars are needed as 16 lanes: a step of scalars, or a slow step's operand
  for (std::size_t k = 0; k < n_; ++k) {
    lanes = lanes || (scalar_[k] && p_.steps[k].kind != Kind::load);
    if (slow_[k] && !scalar_[k])
      for (int r : operands(k)) lanes = lanes || scalar_[static_cast<std::size_t>(r)];
  }
  if (lanes) {
    // The scalars go through per-lane copies that the compiler cannot see into (the empty asm),
    // or it would hoist the math out of the loop as one scalar libm call.
    for (std::size_t k = 0; k < n_; ++k)
      if (scalar_[k] && p_.steps[k].kind == Kind::load)
        src_ << "  float s" << k << "[16];\n  for (int lane = 0; lane < 16; ++lane) s" << k << "[lane] = " << load_value(k, "0", "")
             << ";\n  __asm__ __volatile__(\"\" : : \"r\"(s" << k << ") : \"memory\");\n";
    for (std::size_t k = 0; k < n_; ++k)
      if (scalar_[k] && p_.steps[k].kind != Kind::load) scalar_step(k);
  }
  for (std::size_t k = 0; k < n_; ++k)
    if (scalar_[k])
      src_ << "  const float " << reg(k) << " = "
           << (p_.steps[k].kind == Kind::load ? load_value(k, "0", "") : cat({"s", std::to_string(k), "[0]"})) << ";\n";
}

/// Step k of scalars into s<k>, its 16 lanes.
void Writer::scalar_step(std::size_t k) {
  const std::string result = cat({"s", std::to_string(k)});
  src_ << "  float " << result << "[16];\n";
  if (slow_[k]) {
    src_ << "  " << slow_call(k, result);
    return;
  }
  src_ << "#pragma omp simd\n  for (int lane = 0; lane < 16; ++lane) {\n";
  std::set<int> declared;
  for (int r : operands(k))
    if (declared.insert(r).second) src_ << "    const float " << reg(r) << " = s" << r << "[lane];\n";
  src_ << "    " << result << "[lane] = " << expression(k) << ";\n  }\n";
}

/// One block of 16 lanes: its lane loops, between them the slow steps' calls.
void Writer::block(const Lanes& at) {
  for (std::size_t k = 0; k < n_; ++k)
    if (lanes_[k]) src_ << "    float " << reg(k) << "_lanes[16];\n";
  for (int s = 0; s < segments_; ++s) {
    for (std::size_t k = 0; k < n_; ++k)
      if (s > 0 && slow_[k] && !scalar_[k] && segment_[k] == s) src_ << "    " << slow_call(k, cat({reg(k), "_lanes"}));
    segment(at, s);
  }
}

/// Lane loop s: the registers of earlier loops it reads, its steps, and (the last) the outputs.
void Writer::segment(const Lanes& at, int s) {
  const bool last = s == segments_ - 1;
  std::vector<bool> read(n_, false);
  for (std::size_t k = 0; k < n_; ++k)
    if (!scalar_[k] && !slow_[k] && segment_[k] == s && p_.steps[k].kind != Kind::load)
      for (int r : operands(k)) read[static_cast<std::size_t>(r)] = true;
  if (last)
    for (const auto& o : p_.outputs) read[static_cast<std::size_t>(o.reg)] = true;
  std::ostringstream b;
  for (std::size_t k = 0; k < n_; ++k)
    if (read[k] && lanes_[k] && (slow_[k] || segment_[k] != s)) b << "      const float " << reg(k) << " = " << reg(k) << "_lanes[" << at.lane << "];\n";
  for (std::size_t k = 0; k < n_; ++k) {
    if (scalar_[k] || slow_[k] || segment_[k] != s) continue;
    const bool load = p_.steps[k].kind == Kind::load;
    b << "      const float " << reg(k) << " = " << (load ? load_value(k, at.index, at.in_suffix) : expression(k)) << ";\n";
    if (lanes_[k]) b << "      " << reg(k) << "_lanes[" << at.lane << "] = " << reg(k) << ";\n";
  }
  for (std::size_t o = 0; last && o < p_.outputs.size(); ++o) {
    const auto& out = p_.outputs[o];
    b << "      out" << o << at.out_suffix << "[" << at.out_index << "] = ";
    if (out.dtype == DType::f32) b << reg(out.reg) << ";\n";
    else b << "(unsigned char)(" << reg(out.reg) << " != 0);\n";
  }
  if (!b.str().empty()) src_ << "#pragma omp simd\n    " << at.header << " {\n" << b.str() << "    }\n";
}

void Writer::kernel_pointers() {
  for (std::size_t j = 0; j < p_.inputs.size(); ++j)
    src_ << "  const " << storage_type(p_.inputs[j].dtype) << "* in" << j << " = (const " << storage_type(p_.inputs[j].dtype)
         << "*)in[" << j << "];\n";
  for (std::size_t o = 0; o < p_.outputs.size(); ++o)
    src_ << "  " << storage_type(p_.outputs[o].dtype) << "* out" << o << " = (" << storage_type(p_.outputs[o].dtype) << "*)out["
         << o << "];\n";
}

/// Whole lines only: elements up to the first 64-byte boundary, and the partial block at the end,
/// go through the plain kernel (outputs not all aligned alike: all of them).
void Writer::streaming_start() {
  src_ << "  long i = begin;\n  while (i < end && ((unsigned long)(out0 + i) & 63)) ++i;\n  if (0";
  for (std::size_t o = 1; o < p_.outputs.size(); ++o) src_ << " || ((unsigned long)(out" << o << " + i) & 63)";
  src_ << ") i = end;\n  canopy_fused_kernel(in, out, begin, i);\n";
}

/// The last partial block: its lanes padded with zeros, run as a whole block.
void Writer::partial_block() {
  src_ << "  if (i < end) {\n    const long m = end - i;\n";
  for (std::size_t j = 0; j < p_.inputs.size(); ++j)
    if (p_.inputs[j].mode == Mode::full)
      src_ << "    " << storage_type(p_.inputs[j].dtype) << " in" << j << "_pad[16] = {};\n    for (long e = 0; e < m; ++e) in" << j
           << "_pad[e] = in" << j << "[i + e];\n";
  for (std::size_t o = 0; o < p_.outputs.size(); ++o) src_ << "    " << storage_type(p_.outputs[o].dtype) << " out" << o << "_pad[16];\n";
  block({"for (long e = 0; e < 16; ++e)", "e", "_pad", "e", "_pad", "e"});
  for (std::size_t o = 0; o < p_.outputs.size(); ++o) src_ << "    for (long e = 0; e < m; ++e) out" << o << "[i + e] = out" << o << "_pad[e];\n";
  src_ << "  }\n";
}

/// The kernel, `streaming`: its whole 16-lane blocks of outputs stored non-temporally (past the
/// caches: no read for ownership of each line), for outputs larger than the last-level cache.
/// Blocks of exactly 16 lanes: a loop of a known multiple of the vector width has no scalar
/// remainder, so no scalar math function is linked in (build() refuses objects that call one).
void Writer::kernel(bool streaming) {
  src_ << "extern \"C\" void canopy_fused_kernel" << (streaming ? "_stream" : "")
       << "(const void* const* in, void* const* out, long begin, long end) {\n";
  kernel_pointers();
  if (streaming) streaming_start();
  prologue();
  if (!streaming) src_ << "  long i = begin;\n";
  src_ << "  for (; i + 16 <= end; i += 16) {\n";
  if (!streaming) {
    block({"for (long e = i; e < i + 16; ++e)", "e", "", "e - i", "", "e"});
    src_ << "  }\n";
    partial_block();
    src_ << "}\n";
    return;
  }
  for (std::size_t o = 0; o < p_.outputs.size(); ++o) src_ << "    float out" << o << "_blk[16] __attribute__((aligned(64)));\n";
  block({"for (long e = i; e < i + 16; ++e)", "e", "", "e - i", "_blk", "e - i"});
  for (std::size_t o = 0; o < p_.outputs.size(); ++o) src_ << "    STREAM(out" << o << " + i, out" << o << "_blk);\n";
  src_ << "  }\n  __builtin_ia32_sfence();\n  canopy_fused_kernel(in, out, i, end);\n}\n";
}

/// STREAM(p, b): 64 bytes of 16 floats in non-temporal stores of the instruction set's width.
void Writer::stream_macro() {
  switch (isa_) {
    case Isa::avx512:
      src_ << "typedef float canopy_v16 __attribute__((vector_size(64)));\n"
              "#define STREAM(p, b) __builtin_ia32_movntps512((p), *(const canopy_v16*)(b))\n";
      break;
    case Isa::avx2:
      src_ << "typedef float canopy_v8 __attribute__((vector_size(32)));\n"
              "#define STREAM(p, b) (__builtin_ia32_movntps256((p), *(const canopy_v8*)(b)), "
              "__builtin_ia32_movntps256((p) + 8, *(const canopy_v8*)((b) + 8)))\n";
      break;
    case Isa::base:
      src_ << "typedef float canopy_v4 __attribute__((vector_size(16)));\n"
              "#define STREAM(p, b) for (int q = 0; q < 16; q += 4) __builtin_ia32_movntps((p) + q, *(const canopy_v4*)((b) + q))\n";
      break;
  }
}

std::string Writer::source() {
  header();
  kernel(false);
  bool all_f32 = true;
  for (const auto& o : p_.outputs) all_f32 = all_f32 && o.dtype == DType::f32;
  if (all_f32) {
    stream_macro();
    kernel(true);
  }
  return src_.str();
}

}  // namespace

std::optional<std::string> fused_source(const FusedProgram& p, Isa isa) {
  if (!writable(p)) return std::nullopt;
  return Writer(p, isa).source();
}

}  // namespace canopy::kernels::cpu::codegen
