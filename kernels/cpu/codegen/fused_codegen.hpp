// Internal to kernels/cpu: generated code for fused elementwise programs (the opt-in backend of
// loops/fused.cpp): the C++ source of a program, and its build by the system compiler into a
// shared object cached on disk and loaded with dlopen.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "canopy/kernels/fused_program.hpp"
#include "canopy/kernels/ops.hpp"

namespace canopy::kernels::cpu::codegen {

/// The instruction set the interpreter's loops run with on this CPU (CANOPY_ISA_VARIANTS' pick),
/// which generated code must be built for to give the same values.
enum class Isa { avx512, avx2, base };
Isa host_isa();

/// The source of `canopy_fused_kernel(in, out, begin, end)` for program `p` on `isa`: elements
/// [begin, end) of every output, with the interpreter's values (and, where every output is f32,
/// `canopy_fused_kernel_stream`, the same with non-temporal stores); nullopt when `p` has a step,
/// input or output the generator does not write (random streams, row steps, sums, row inputs).
/// Every unary and binary op is written: inline where the generator has a spelling of it, else
/// through the library's element math, whose headers the source then embeds.
std::optional<std::string> fused_source(const FusedProgram& p, Isa isa);

/// The speed table (spellings.cpp): the inline expression of unary `op` on `x` / binary `op` on
/// `a` and `b`, with the interpreter's values, or nullopt for an op without a spelling (the
/// generator then calls the library's element math).
std::optional<std::string> fast_unary(UnaryOp op, const std::string& x);
std::optional<std::string> fast_binary(BinaryOp op, const std::string& a, const std::string& b);
/// XLA's rational tanh as source (`tanh_rational(x)`, fast_unary's tanh), its multiply-adds
/// written MADD(a, b, c), which the source defines for its instruction set.
extern const char* const kTanhRational;

/// The math functions generated code calls in their vector forms (libmvec), as the interpreter
/// does: a scalar call of one of them in a built object means a loop was not vectorised.
std::span<const char* const> vector_math_functions();

/// A built program's functions: the kernel, and (for programs of f32 outputs only) its form with
/// non-temporal stores.
struct Built {
  FusedCompiledFn kernel = nullptr;
  FusedCompiledFn streaming = nullptr;
};
/// The parts joined, for writing sources (GCC 12 warns falsely, -Wrestrict, about chains of
/// std::string operator+).
inline std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s.append(p);
  return s;
}

/// The directory of compiled generated kernels, this backend's and the GPU's (CANOPY_KERNEL_CACHE,
/// else $XDG_CACHE_HOME/canopy/kernels, else ~/.cache/canopy/kernels), read at each call.
std::filesystem::path kernel_cache_dir();
/// 64-bit FNV-1a of `s` continuing from `h`: the names of cached kernels.
std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull);

/// `source` built into a shared object (or found in the cache directory from an earlier build)
/// and its canopy_fused_kernel(_stream); null with `error` set when it cannot be had.
Built build(const std::string& source, Isa isa, std::string& error);

}  // namespace canopy::kernels::cpu::codegen
