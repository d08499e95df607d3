// CUDA C++ for a fused elementwise program: the steps the interpreter kernel (fused.cu,
// fused_math.hpp's fused_element) runs for each element, written out as straight-line code over
// named registers, so that NVRTC compiles one kernel per program with nothing decoded at run time.
// Each thread runs a grid-stride loop; where the layout allows, it reads and writes 4 elements
// at a time (one 128-bit access per f32 operand), and the last n % 4 elements go one at a time.
// A program with row sums runs a thread per row instead, its elements one at a time.
// Scalar inputs are read once per thread, row inputs at i % (their length, a constant). The math
// is the library's own: the embedded element_math.hpp (as the interpreter calls it) and the CPU's
// rational tanh (loops/tanh_rational.hpp), never a second copy of either.
#include "fused_source.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

#include "canopy/kernels/cuda.hpp"  // before fused_math.hpp, which names cuda::UnaryOp and BinaryOp
#include "../fused_math.hpp"
#include "../../cpu/codegen/fused_codegen.hpp"
#include "embedded_headers.hpp"

namespace canopy::kernels::cuda::generated {
namespace {

using cpu::codegen::cat;
using Kind = FusedStep::Kind;
using Mode = FusedInput::Mode;

bool is_bool(DType d) { return d == DType::bool_; }
const char* storage_type(DType d) { return is_bool(d) ? "unsigned char" : d == DType::i32 ? "std::int32_t" : "float"; }
std::string reg(int r) { return cat({"r", std::to_string(r)}); }

/// The expression of step s's value from the registers before it (as fused_element computes it);
/// `row_step`: a row step's index among the program's (its row's statistics in `st`).
std::string step_value(const FusedStep& s, int row_step) {
  const std::string a = s.a >= 0 ? reg(s.a) : "", b = s.b >= 0 ? reg(s.b) : "", c = s.c >= 0 ? reg(s.c) : "";
  const std::string op = std::to_string(s.op);
  switch (s.kind) {
    case Kind::load: return cat({"x[", std::to_string(s.a), "]"});
    case Kind::unary: {
      const auto u = static_cast<UnaryOp>(s.op);
      if (u == UnaryOp::logical_not) return cat({"(", a, " != 0 ? 0.0f : 1.0f)"});  // bools as 0/1
      if (u == UnaryOp::tanh) return cat({"::canopy::kernels::math::tanh_rational(", a, ")"});
      return cat({"math::unary(static_cast<UnaryOp>(", op, "), ", a, ")"});
    }
    case Kind::binary: {
      const auto o = static_cast<BinaryOp>(s.op);
      if (math::is_comparison(o)) return cat({"(math::compare(static_cast<BinaryOp>(", op, "), ", a, ", ", b, ") ? 1.0f : 0.0f)"});
      if (o == BinaryOp::logical_and) return cat({"(", a, " * ", b, ")"});
      if (o == BinaryOp::logical_or) return cat({"(", a, " > ", b, " ? ", a, " : ", b, ")"});
      if (o == BinaryOp::logical_xor) return cat({"(", a, " != ", b, " ? 1.0f : 0.0f)"});
      return cat({"math::binary(static_cast<BinaryOp>(", op, "), ", a, ", ", b, ")"});
    }
    case Kind::select: return cat({"(", a, " != 0 ? ", c, " : ", b, ")"});
    case Kind::to_bool: return cat({"(", a, " != 0 ? 1.0f : 0.0f)"});
    case Kind::log_softmax: {
      const std::string j = std::to_string(row_step);
      return cat({"static_cast<float>((static_cast<double>(", a, ") - st.max[", j, "]) - st.log_sum[", j, "])"});
    }
    case Kind::row_sum: return cat({"static_cast<float>(st.sum[", std::to_string(row_step), "])"});
    case Kind::int_compare:  // of the i32 values the registers hold the bits of
      return cat({"(math::compare(static_cast<BinaryOp>(", op, "), std::bit_cast<std::int32_t>(", a,
                  "), std::bit_cast<std::int32_t>(", b, ")) ? 1.0f : 0.0f)"});
    default: return "0.0f";  // not in a supported program
  }
}

/// Input k's value for element `index` as a float (bools as 0/1, i32 as its bits).
std::string input_value(const FusedInput& in, std::size_t k, const std::string& index) {
  const std::string ptr = cat({"in", std::to_string(k)});
  std::string at;
  switch (in.mode) {
    case Mode::scalar: return cat({"s", std::to_string(k)});
    case Mode::row: at = cat({ptr, "[(", index, ") % ", std::to_string(in.size), "LL]"}); break;
    case Mode::column: at = cat({ptr, "[(", index, ") / ", std::to_string(in.inner), "LL]"}); break;
    default: at = cat({ptr, "[", index, "]"}); break;
  }
  if (in.dtype == DType::i32) return cat({"std::bit_cast<float>(", at, ")"});  // its bits
  return is_bool(in.dtype) ? cat({"(", at, " ? 1.0f : 0.0f)"}) : at;
}

/// Per step: its index among the program's row steps (log_softmax, row_sum), -1 for the others.
std::vector<int> row_steps_of(const FusedProgram& p) {
  std::vector<int> index(p.steps.size(), -1);
  int next = 0;
  for (std::size_t k = 0; k < p.steps.size(); ++k)
    if (p.steps[k].kind == Kind::log_softmax || p.steps[k].kind == Kind::row_sum) index[k] = next++;
  return index;
}

/// Steps 0..last as straight-line code over named registers.
void write_steps(std::ostringstream& s, const FusedProgram& p, int last, const std::vector<int>& row_steps) {
  for (int k = 0; k <= last; ++k)
    s << "  const float " << reg(k) << " = " << step_value(p.steps[static_cast<std::size_t>(k)], row_steps[static_cast<std::size_t>(k)])
      << ";\n";
}

/// `const float x[] = {...}`: the inputs' values for element i, at `indent`.
std::string input_values(const FusedProgram& p, const std::string& indent) {
  std::string line = cat({indent, "const float x[", std::to_string(p.inputs.size()), "] = {"});
  for (std::size_t k = 0; k < p.inputs.size(); ++k) line += cat({k ? ", " : "", input_value(p.inputs[k], k, "i")});
  return line + "};\n";
}

/// `element(x, y)`: one element's steps, register k defined by step k; with row steps, the row's
/// statistics (`Stats st`) come in as well, and each row step's operand has a function of its own
/// (`operand<j>(x, st)`), which the statistics' passes call.
void write_element_functions(std::ostringstream& s, const FusedProgram& p) {
  const std::size_t ni = p.inputs.size(), no = p.outputs.size();
  const std::vector<int> row_steps = row_steps_of(p);
  const int num_row_steps = static_cast<int>(std::count_if(row_steps.begin(), row_steps.end(), [](int j) { return j >= 0; }));
  const std::string x_param = cat({"const float (&x)[", std::to_string(ni), "]"});
  std::string stats_param;
  if (num_row_steps > 0) {
    s << "// Each row step's statistics over its row: a log_softmax's operand's max and\n"
         "// log(sum(exp(operand - max))); a row_sum's sum.\n"
         "struct Stats {\n  double max[" << num_row_steps << "], log_sum[" << num_row_steps << "], sum[" << num_row_steps
      << "];\n};\n\n";
    stats_param = ", const Stats& st";
    for (std::size_t k = 0; k < p.steps.size(); ++k)
      if (row_steps[k] >= 0) {
        s << "CANOPY_FUSED_FN float operand" << row_steps[k] << "(" << x_param << stats_param << ") {\n";
        write_steps(s, p, p.steps[k].a, row_steps);
        s << "  return " << reg(p.steps[k].a) << ";\n}\n\n";
      }
  }
  s << "// x: the inputs' values (bools as 0/1); y: the outputs' values.\n"
       "CANOPY_FUSED_FN void element(" << x_param << ", float (&y)[" << no << "]" << stats_param << ") {\n";
  write_steps(s, p, static_cast<int>(p.steps.size()) - 1, row_steps);
  for (std::size_t o = 0; o < no; ++o) s << "  y[" << o << "] = " << reg(p.outputs[o].reg) << ";\n";
  s << "}\n\n";
}

/// A program whose threads take rows (row sums, row steps): a thread per row; first each row
/// step's statistics, in order (a row_sum's sum; a log_softmax's operand's max, NaN propagating,
/// and the log of the sum of exps; in f64, a pass over the row for each), then its elements in
/// turn, each row sum added up in f64 and written once (the loop of `run`, after its pointers
/// and scalars).
void write_row_loop(std::ostringstream& s, const FusedProgram& p) {
  const std::size_t no = p.outputs.size();
  const std::string len = std::to_string(gpu_row_length(p)) + "LL";
  const std::vector<int> row_steps = row_steps_of(p);
  const bool stats = std::any_of(row_steps.begin(), row_steps.end(), [](int j) { return j >= 0; });
  auto summed = [&](std::size_t o) { return p.outputs[o].reduce != FusedProgram::Output::Reduce::none; };
  s << "  for (long long row = thread; row < n / " << len << "; row += threads) {\n"
    << "    const long long first = row * " << len << ", end = first + " << len << ";\n";
  if (stats) s << "    Stats st;\n";
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    if (row_steps[k] < 0) continue;
    const std::string j = std::to_string(row_steps[k]);
    if (p.steps[k].kind == Kind::row_sum) {
      s << "    {\n      double sum = 0;\n      for (long long i = first; i < end; ++i) {\n" << input_values(p, "        ")
        << "        sum += operand" << j << "(x, st);\n      }\n      st.sum[" << j << "] = sum;\n    }\n";
      continue;
    }
    s << "    {\n      double m = 0, sum = 0;\n      for (long long i = first; i < end; ++i) {\n" << input_values(p, "        ")
      << "        const double v = operand" << j << "(x, st);\n"
      << "        m = i == first || v > m || v != v ? v : m;\n      }\n"
      << "      for (long long i = first; i < end; ++i) {\n" << input_values(p, "        ")
      << "        sum += math::m_exp(static_cast<double>(operand" << j << "(x, st)) - m);\n      }\n"
      << "      st.max[" << j << "] = m;\n      st.log_sum[" << j << "] = math::m_log(sum);\n    }\n";
  }
  for (std::size_t o = 0; o < no; ++o)
    if (summed(o)) s << "    double sum" << o << " = 0;\n";
  s << "    for (long long i = first; i < end; ++i) {\n" << input_values(p, "      ") << "      float y[" << no
    << "];\n      element(x, y" << (stats ? ", st" : "") << ");\n";
  for (std::size_t o = 0; o < no; ++o) {
    if (summed(o)) s << "      sum" << o << " += y[" << o << "];\n";
    else s << "      out" << o << "[i] = y[" << o << (is_bool(p.outputs[o].dtype) ? "] != 0" : "]") << ";\n";
  }
  s << "    }\n";
  for (std::size_t o = 0; o < no; ++o)
    if (summed(o)) s << "    out" << o << "[row] = static_cast<float>(sum" << o << ");\n";
  s << "  }\n";
}

/// Whether input k is read 4 elements at a time under `layout`.
bool vector_input(const FusedProgram& p, const FusedLayout& layout, std::size_t k) {
  const Mode m = p.inputs[k].mode;
  return layout.vector && (m == Mode::full || (m == Mode::row && k < layout.vector_rows.size() && layout.vector_rows[k]));
}

}  // namespace

bool generated_supported(const FusedProgram& p) {
  return fused_view_supported(p) && !p.inputs.empty() && !p.outputs.empty();
}

FusedLayout fused_layout(const FusedProgram& p, std::span<const void* const> in, std::span<void* const> out, std::int64_t n) {
  FusedLayout layout;
  if (gpu_row_length(p) > 0) return layout;  // a thread per row: element by element
  auto aligned = [](const void* ptr, DType d) {
    return reinterpret_cast<std::uintptr_t>(ptr) % (is_bool(d) ? 4 : 16) == 0;
  };
  layout.vector = n >= kVectorElements;
  for (std::size_t k = 0; k < p.inputs.size() && k < in.size(); ++k)
    if (p.inputs[k].mode == Mode::full) layout.vector = layout.vector && aligned(in[k], p.inputs[k].dtype);
  for (std::size_t o = 0; o < p.outputs.size() && o < out.size(); ++o)
    layout.vector = layout.vector && aligned(out[o], p.outputs[o].dtype);
  if (!layout.vector) return layout;
  layout.vector_rows.assign(p.inputs.size(), false);
  for (std::size_t k = 0; k < p.inputs.size() && k < in.size(); ++k)
    layout.vector_rows[k] = p.inputs[k].mode == Mode::row && p.inputs[k].size % kVectorElements == 0 &&
                            aligned(in[k], p.inputs[k].dtype);
  return layout;
}

FusedLayout block_layout(const FusedProgram& p) {
  void* const block = reinterpret_cast<void*>(std::uintptr_t{256});  // a block's start: aligned for anything
  const std::vector<const void*> in(p.inputs.size(), block);
  const std::vector<void*> out(p.outputs.size(), block);
  return fused_layout(p, in, out, p.elements);
}

std::string fused_kernel_body(const FusedProgram& p, const FusedLayout& layout) {
  const std::size_t ni = p.inputs.size(), no = p.outputs.size();
  std::ostringstream s;
  s << "namespace canopy_fused {\n"
       "using ::canopy::kernels::BinaryOp;\n"
       "using ::canopy::kernels::UnaryOp;\n"
       "namespace math = ::canopy::kernels::math;\n\n"
       "struct alignas(16) F4 { float v[4]; };  // 4 f32 elements: one 128-bit access\n"
       "struct alignas(4) B4 { unsigned char v[4]; };  // 4 bools\n\n";
  s << "struct Args {\n  const void* in[" << ni << "];\n  void* out[" << no << "];\n  long long n;\n};\n\n";
  write_element_functions(s, p);
  // One thread's share of the grid-stride loop.
  s << "CANOPY_FUSED_FN void run(const Args& args, long long thread, long long threads) {\n";
  for (std::size_t k = 0; k < ni; ++k)
    s << "  const " << storage_type(p.inputs[k].dtype) << "* __restrict__ in" << k << " = static_cast<const "
      << storage_type(p.inputs[k].dtype) << "*>(args.in[" << k << "]);\n";
  for (std::size_t o = 0; o < no; ++o)
    s << "  " << storage_type(p.outputs[o].dtype) << "* __restrict__ out" << o << " = static_cast<"
      << storage_type(p.outputs[o].dtype) << "*>(args.out[" << o << "]);\n";
  for (std::size_t k = 0; k < ni; ++k)
    if (p.inputs[k].mode == Mode::scalar) {
      FusedInput first = p.inputs[k];
      first.mode = Mode::full;  // element 0 of it
      s << "  const float s" << k << " = " << input_value(first, k, "0") << ";\n";
    }
  s << "  const long long n = args.n;\n";
  if (gpu_row_length(p) > 0) {
    write_row_loop(s, p);
    s << "}\n\n}  // namespace canopy_fused\n";
    return s.str();
  }
  s << "  long long first = thread;\n";
  if (layout.vector) {
    s << "  // 4 elements at a time: one vector access per full operand.\n"
         "  const long long blocks = n / 4;\n"
         "  for (long long b = thread; b < blocks; b += threads) {\n"
         "    const long long i = b * 4;\n";
    for (std::size_t k = 0; k < ni; ++k)
      if (vector_input(p, layout, k)) {
        const bool row = p.inputs[k].mode == Mode::row;
        s << "    const " << (is_bool(p.inputs[k].dtype) ? "B4" : "F4") << " v" << k << " = *reinterpret_cast<const "
          << (is_bool(p.inputs[k].dtype) ? "B4" : "F4") << "*>(in" << k << " + "
          << (row ? cat({"i % ", std::to_string(p.inputs[k].size), "LL"}) : "i") << ");\n";
      }
    s << "    float y[4][" << no << "];\n#pragma unroll\n    for (int l = 0; l < 4; ++l) {\n      const float x[" << ni << "] = {";
    for (std::size_t k = 0; k < ni; ++k) {
      if (k) s << ", ";
      if (vector_input(p, layout, k))
        s << (is_bool(p.inputs[k].dtype) ? "(v" : "v") << k << (is_bool(p.inputs[k].dtype) ? ".v[l] ? 1.0f : 0.0f)" : ".v[l]");
      else s << input_value(p.inputs[k], k, "i + l");
    }
    s << "};\n      element(x, y[l]);\n    }\n";
    for (std::size_t o = 0; o < no; ++o) {
      const bool b = is_bool(p.outputs[o].dtype);
      s << "    " << (b ? "B4" : "F4") << " w" << o << ";\n#pragma unroll\n    for (int l = 0; l < 4; ++l) w" << o << ".v[l] = "
        << "y[l][" << o << (b ? "] != 0" : "]") << ";\n    *reinterpret_cast<"
        << (b ? "B4" : "F4") << "*>(out" << o << " + i) = w" << o << ";\n";
    }
    s << "  }\n  // The last n % 4 elements, one each.\n  first = blocks * 4 + thread;\n";
  }
  s << "  for (long long i = first; i < n; i += threads) {\n" << input_values(p, "    ") << "    float y[" << no
    << "];\n    element(x, y);\n";
  for (std::size_t o = 0; o < no; ++o)
    s << "    out" << o << "[i] = y[" << o << (is_bool(p.outputs[o].dtype) ? "] != 0" : "]") << ";\n";
  s << "  }\n}\n\n}  // namespace canopy_fused\n";
  return s.str();
}

std::string fused_kernel_source(const FusedProgram& p, const FusedLayout& layout) {
  std::string src = nvrtc_prelude();
  src += "\n// A fused elementwise program of canopy, generated.\n#define CANOPY_FUSED_FN __forceinline__\n\n";
  src += fused_kernel_body(p, layout);
  src += cat({"\nextern \"C\" __global__ void __launch_bounds__(", std::to_string(kThreads), ") ", kKernelName,
              "(const canopy_fused::Args args) {\n"});
  src +=
      "  canopy_fused::run(args, blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x,\n"
      "                    static_cast<long long>(gridDim.x) * blockDim.x);\n}\n";
  return src;
}

std::string fused_segments_body(const FusedProgram& p, const FusedLayout& layout) {
  const int capacity = fused_segments_capacity(p);
  std::string s = fused_kernel_body(p, layout);
  s += cat({"\nnamespace canopy_fused {\n\nstruct Segments {\n  Args args[", std::to_string(capacity),
            "];\n  long long first_block[", std::to_string(capacity + 1), "];\n  long long count;\n};\n\n"});
  s +=
      "CANOPY_FUSED_FN void run_segments(const Segments& s, long long block, long long thread, long long threads_per_block) {\n"
      "  long long k = 0;\n"
      "  while (k + 1 < s.count && block >= s.first_block[k + 1]) ++k;\n"
      "  run(s.args[k], (block - s.first_block[k]) * threads_per_block + thread,\n"
      "      (s.first_block[k + 1] - s.first_block[k]) * threads_per_block);\n"
      "}\n\n}  // namespace canopy_fused\n";
  return s;
}

std::string fused_segments_source(const FusedProgram& p, const FusedLayout& layout) {
  std::string src = nvrtc_prelude();
  src += "\n// A fused elementwise program of canopy over several operand sets, generated.\n#define CANOPY_FUSED_FN __forceinline__\n\n";
  src += fused_segments_body(p, layout);
  src += cat({"\nextern \"C\" __global__ void __launch_bounds__(", std::to_string(kThreads), ") ", kSegmentsKernelName,
              "(const canopy_fused::Segments segments) {\n"
              "  canopy_fused::run_segments(segments, blockIdx.x, threadIdx.x, blockDim.x);\n}\n"});
  return src;
}

void pack_args(std::uint64_t* words, std::span<const void* const> in, std::span<void* const> out, std::int64_t n) {
  for (std::size_t k = 0; k < in.size(); ++k) std::memcpy(&words[k], &in[k], sizeof(void*));
  for (std::size_t o = 0; o < out.size(); ++o) std::memcpy(&words[in.size() + o], &out[o], sizeof(void*));
  std::memcpy(&words[in.size() + out.size()], &n, sizeof n);
}

std::int64_t blocks_wanted(std::int64_t n, bool vector) {
  const std::int64_t work = std::max<std::int64_t>(vector ? n / kVectorElements : n, 1);
  return (work + kThreads - 1) / kThreads;
}

SegmentsLaunch segments_launch(std::span<const FusedProgram* const> programs, const FusedLayout& layout,
                               std::span<const void* const> in, std::span<void* const> out, std::int64_t max_blocks) {
  const FusedProgram& p = *programs[0];
  const auto capacity = static_cast<std::size_t>(fused_segments_capacity(p));
  const std::size_t ni = p.inputs.size(), no = p.outputs.size(), args = ni + no + 1, count = programs.size();
  // Blocks each segment asks for, then scaled down to max_blocks in all where they ask for more.
  std::vector<std::int64_t> wanted(count);
  std::int64_t total = 0;
  for (std::size_t k = 0; k < count; ++k) {
    wanted[k] = blocks_wanted(programs[k]->elements, layout.vector);
    total += wanted[k];
  }
  if (total > max_blocks)
    for (std::int64_t& w : wanted) w = std::max<std::int64_t>(1, w * max_blocks / total);
  SegmentsLaunch launch;
  launch.param.assign(capacity * args + capacity + 2, 0);
  std::uint64_t* first_block = launch.param.data() + capacity * args;
  for (std::size_t k = 0; k < count; ++k) {
    pack_args(launch.param.data() + k * args, in.subspan(k * ni, ni), out.subspan(k * no, no), programs[k]->elements);
    first_block[k + 1] = first_block[k] + static_cast<std::uint64_t>(wanted[k]);
  }
  launch.blocks = static_cast<std::int64_t>(first_block[count]);
  first_block[capacity + 1] = count;  // `count`, after the capacity + 1 first blocks
  return launch;
}

const std::string& nvrtc_prelude() {
  static const std::string text = cpu::codegen::concatenated(kEmbeddedHeaders, kEmbeddedHeaderCount, false);
  return text;
}

std::vector<std::string> embedded_header_paths() {
  std::vector<std::string> paths;
  for (std::size_t h = 0; h < kEmbeddedHeaderCount; ++h) paths.emplace_back(kEmbeddedHeaders[h].path);
  return paths;
}

std::string program_key(const FusedProgram& p, const FusedLayout& layout) {
  std::string key;
  auto put = [&](std::int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(static_cast<std::int64_t>(p.inputs.size()));
  for (const FusedInput& in : p.inputs) {
    put(static_cast<std::int64_t>(in.mode));
    put(static_cast<std::int64_t>(in.dtype));
    if (in.mode == Mode::row) put(in.size);
    if (in.mode == Mode::column) put(in.inner);
  }
  put(static_cast<std::int64_t>(p.steps.size()));
  for (const FusedStep& st : p.steps) {
    put(static_cast<std::int64_t>(st.kind) << 8 | st.op);
    put(st.a);
    put(st.b);
    put(st.c);
  }
  put(static_cast<std::int64_t>(p.outputs.size()));
  for (const auto& o : p.outputs) {
    put(o.reg);
    put(static_cast<std::int64_t>(o.dtype));
    put(static_cast<std::int64_t>(o.reduce));
    put(o.inner);
  }
  put(p.row);
  put(layout.vector);
  for (bool r : layout.vector_rows) put(r);
  return key;
}

}  // namespace canopy::kernels::cuda::generated
