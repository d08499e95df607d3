// CUDA C++ for a scalar program: each step one line over typed values, as the elementwise kernels
// (elementwise.cu) compute that op for that dtype with the library's element math (f32 math in
// f64, rounded once), so that integers and bools get the same bits as the kernels it replaces.
// One thread runs it.
#include "scalar_source.hpp"

#include <cstring>
#include <sstream>

#include "canopy/kernels/ops.hpp"
#include "fused_source.hpp"

namespace canopy::kernels::cuda::generated {
namespace {

using Kind = ScalarStep::Kind;

/// The C++ type of a value of dtype d (nvrtc_std.hpp spells the fixed-width names under NVRTC).
const char* value_type(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i8: return "std::int8_t";
    case DType::u8: return "std::uint8_t";
    case DType::i16: return "std::int16_t";
    case DType::u16: return "std::uint16_t";
    case DType::i32: return "std::int32_t";
    case DType::u32: return "std::uint32_t";
    case DType::i64: return "std::int64_t";
    case DType::u64: return "std::uint64_t";
    case DType::f64: return "double";
    default: return "float";
  }
}

std::string value(int v) { return "v" + std::to_string(v); }

/// Step k's expression, from the values before it (`dtype_of` gives each value's dtype; `count`
/// the elements of a summed input).
template <class DTypeOf>
std::string step_value(const ScalarStep& s, DTypeOf&& dtype_of, const std::string& count) {
  const std::string a = value(s.operands[0]), op = std::to_string(s.op);
  // f32 math in f64, rounded once: the CPU's f32 functions are correctly rounded or nearly, and a
  // chain of single values can magnify an ulp (1 - 0.999^t at t = 2: an ulp of the pow is 3e-5
  // of the result); +, -, * and / give the f32 operations' own results this way.
  const bool wide = dtype_of(s.operands[0]) == DType::f32;
  auto load = [&](const std::string& v) { return wide ? "static_cast<double>(" + v + ")" : "math::load(" + v + ")"; };
  switch (s.kind) {
    case Kind::unary: {
      const std::string r = "math::unary(static_cast<UnaryOp>(" + op + "), " + load(a) + ")";
      if (s.dtype == DType::bool_) return "(" + r + " != 0)";  // is_finite, and logical_not of a bool
      return "math::store<" + std::string(value_type(s.dtype)) + ">(" + r + ")";
    }
    case Kind::binary: {
      const std::string args = "static_cast<BinaryOp>(" + op + "), " + load(a) + ", " + load(value(s.operands[1]));
      if (is_comparison(static_cast<BinaryOp>(s.op))) return "math::compare(" + args + ")";
      return "math::store<" + std::string(value_type(s.dtype)) + ">(math::binary(" + args + "))";
    }
    case Kind::convert:
      return "math::convert<" + std::string(value_type(dtype_of(s.operands[0]))) + ", " + value_type(s.dtype) + ">(" + a + ")";
    case Kind::select: {
      // Case `which` of the cases after it; an i32 index out of range takes the first or the last
      // case, as the CPU's kernel clamps it.
      const std::size_t cases = s.operands.size() - 1;
      if (dtype_of(s.operands[0]) == DType::bool_) return "(" + a + " ? " + value(s.operands[2]) + " : " + value(s.operands[1]) + ")";
      std::string r = value(s.operands[cases]);
      for (std::size_t c = cases - 1; c >= 2; --c)
        r = "(" + a + " == " + std::to_string(c - 1) + " ? " + value(s.operands[c]) + " : " + r + ")";
      return "(" + a + " <= 0 ? " + value(s.operands[1]) + " : " + r + ")";
    }
    case Kind::copy: return a;
    case Kind::sum: {
      const std::string in = "args.in[" + std::to_string(s.operands[0]) + "]", t = value_type(s.dtype);
      return (is_floating(s.dtype) ? "float_sum<" : "integer_sum<") + t + ">(" + in + ", " + count + "LL)";
    }
  }
  return a;
}

}  // namespace

bool scalar_generated_supported(const ScalarProgram& p) {
  const int ni = static_cast<int>(p.inputs.size());
  std::vector<DType> dtypes;
  for (const ScalarInput& in : p.inputs) {
    if (!scalar_program_dtype(in.dtype) || in.elements < 1 || in.elements > kMaxScalarSum) return false;
    dtypes.push_back(in.dtype);
  }
  int defined = ni;
  for (const ScalarStep& s : p.steps) {
    if (!scalar_program_dtype(s.dtype) || s.operands.empty()) return false;
    for (int v : s.operands)
      if (v < 0 || v >= defined) return false;
    // A sum reads an input of its own dtype, the other steps single values.
    if (s.kind == Kind::sum) {
      if (s.operands.size() != 1 || s.operands[0] >= ni || !scalar_sum_dtype(s.dtype) ||
          p.inputs[static_cast<std::size_t>(s.operands[0])].dtype != s.dtype)
        return false;
    } else {
      for (int v : s.operands)
        if (v < ni && p.inputs[static_cast<std::size_t>(v)].elements != 1) return false;
    }
    if (s.kind == Kind::binary && s.operands.size() != 2) return false;
    if (s.kind == Kind::select) {
      const DType which = dtypes[static_cast<std::size_t>(s.operands[0])];
      if (s.operands.size() < 3 || (which != DType::bool_ && which != DType::i32) ||
          (which == DType::bool_ && s.operands.size() != 3))
        return false;
    }
    dtypes.push_back(s.dtype);
    ++defined;
  }
  return !p.steps.empty();
}

std::string scalar_kernel_body(const ScalarProgram& p) {
  const std::size_t ni = p.inputs.size(), ns = p.steps.size();
  std::vector<DType> dtypes;
  for (const ScalarInput& in : p.inputs) dtypes.push_back(in.dtype);
  for (const ScalarStep& s : p.steps) dtypes.push_back(s.dtype);
  auto dtype_of = [&](int v) { return dtypes[static_cast<std::size_t>(v)]; };
  std::ostringstream s;
  s << "namespace canopy_scalar {\n"
       "using ::canopy::kernels::BinaryOp;\n"
       "using ::canopy::kernels::UnaryOp;\n"
       "namespace math = ::canopy::kernels::math;\n\n"
       "struct Args {\n  const void* in["
    << (ni ? ni : 1) << "];\n  void* out[" << ns << "];\n};\n\n"
    << "// A sum of n elements: floats added up in f64, integers wrapping.\n"
       "template <class T>\nCANOPY_FUSED_FN T float_sum(const void* in, long long n) {\n"
       "  double acc = 0;\n  for (long long e = 0; e < n; ++e) acc += static_cast<const T*>(in)[e];\n"
       "  return static_cast<T>(acc);\n}\n"
       "template <class T>\nCANOPY_FUSED_FN T integer_sum(const void* in, long long n) {\n"
       "  T acc = 0;\n  for (long long e = 0; e < n; ++e) acc = math::wrapping_add(acc, static_cast<const T*>(in)[e]);\n"
       "  return acc;\n}\n\n"
    << "CANOPY_FUSED_FN void run(const Args& args) {\n";
  for (std::size_t k = 0; k < ni; ++k)  // single values; a summed input is read by its sum
    if (p.inputs[k].elements == 1)
      s << "  const " << value_type(p.inputs[k].dtype) << " " << value(static_cast<int>(k)) << " = *static_cast<const "
        << value_type(p.inputs[k].dtype) << "*>(args.in[" << k << "]);\n";
  for (std::size_t k = 0; k < ns; ++k) {
    const ScalarStep& st = p.steps[k];
    const int v = static_cast<int>(ni + k);
    const std::string count =
        st.kind == Kind::sum ? std::to_string(p.inputs[static_cast<std::size_t>(st.operands[0])].elements) : "";
    s << "  const " << value_type(st.dtype) << " " << value(v) << " = " << step_value(st, dtype_of, count) << ";\n"
      << "  *static_cast<" << value_type(st.dtype) << "*>(args.out[" << k << "]) = " << value(v) << ";\n";
  }
  s << "}\n\n}  // namespace canopy_scalar\n";
  return s.str();
}

std::string scalar_kernel_source(const ScalarProgram& p) {
  std::string src = nvrtc_prelude();
  src += "\n// A scalar program of canopy, generated.\n#define CANOPY_FUSED_FN __forceinline__\n\n";
  src += scalar_kernel_body(p);
  src += std::string("\nextern \"C\" __global__ void ") + kScalarKernelName +
         "(const canopy_scalar::Args args) {\n"
         "  if (blockIdx.x == 0 && threadIdx.x == 0) canopy_scalar::run(args);\n}\n";
  return src;
}

std::string scalar_program_key(const ScalarProgram& p) {
  std::string key = "scalar";
  auto put = [&](std::int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(static_cast<std::int64_t>(p.inputs.size()));
  for (const ScalarInput& in : p.inputs) {
    put(static_cast<std::int64_t>(in.dtype));
    put(in.elements);
  }
  for (const ScalarStep& st : p.steps) {
    put(static_cast<std::int64_t>(st.kind) << 16 | static_cast<std::int64_t>(st.op) << 8 | static_cast<std::int64_t>(st.dtype));
    put(static_cast<std::int64_t>(st.operands.size()));
    for (int v : st.operands) put(v);
  }
  return key;
}

}  // namespace canopy::kernels::cuda::generated
