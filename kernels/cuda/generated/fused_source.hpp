// Internal to kernels/cuda: CUDA C++ for a fused elementwise program (the program the
// interpreter kernel of fused.cu runs), compiled by NVRTC (nvrtc.hpp) into a kernel of its own.
// Pure host code: the tests generate and compile sources on machines without a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "canopy/kernels/fused_program.hpp"

namespace canopy::kernels::cuda::generated {

/// Elements one thread takes per step of the vector path: one 128-bit access of f32 (4 bytes of bools).
inline constexpr int kVectorElements = 4;
/// Threads per block of a generated kernel.
inline constexpr int kThreads = 256;
/// The kernel's name in the compiled module.
inline constexpr const char* kKernelName = "canopy_fused_kernel";

/// How one launch's operands lie in memory, as far as a kernel's source depends on it.
struct FusedLayout {
  /// Every full-size input and every output aligned for 4-element accesses (16 bytes for f32, 4
  /// for bools), and at least 4 elements: the kernel reads and writes them 4 at a time.
  bool vector = false;
  /// Per input (vector path only): a row input read 4 at a time too (its length a multiple of 4,
  /// its data aligned); otherwise each lane reads its own element.
  std::vector<bool> vector_rows;
  bool operator==(const FusedLayout&) const = default;
};
/// The layout of a launch of `p` over n elements with these operands.
FusedLayout fused_layout(const FusedProgram& p, std::span<const void* const> in, std::span<void* const> out,
                         std::int64_t n);

/// The layout of a launch of `p` over its own element count with every operand at the start of
/// a device block (aligned for every access): what a launch inside jit's plan normally has.
FusedLayout block_layout(const FusedProgram& p);

/// Whether a kernel can be generated for `p`: the programs the interpreter runs (full, scalar,
/// row and column inputs of f32 or bool; load, unary, binary, select and to_bool steps; row sums).
bool generated_supported(const FusedProgram& p);

/// The generated part of a kernel's source (generated_supported(p) must hold): in namespace
/// canopy_fused, `struct Args` (the operands' addresses, inputs then outputs, and n), `element`
/// (one element's steps, with the library's element math: math::unary / binary / compare of
/// element_math.hpp, tanh as the CPU's rational tanh) and `run(args, thread, threads)`, one
/// thread's share of a grid-stride loop (4-element vectors and then the tail under a vector
/// layout, single elements otherwise; for a program with row sums, over rows: each row's
/// elements in turn, its sums added up in f64). Its functions are declared CANOPY_FUSED_FN, which the
/// including source defines (a device function under NVRTC; plain `inline` where the tests
/// compile the same text for the host).
std::string fused_kernel_body(const FusedProgram& p, const FusedLayout& layout);

/// The whole source NVRTC compiles: the embedded headers (nvrtc_prelude), the body and the
/// __global__ kernel kKernelName(Args).
std::string fused_kernel_source(const FusedProgram& p, const FusedLayout& layout);

/// The kernel's name in a module of fused_segments_source.
inline constexpr const char* kSegmentsKernelName = "canopy_fused_segments";

/// fused_kernel_body, then (in namespace canopy_fused) `struct Segments { Args args[C]; long long
/// first_block[C + 1]; long long count; }` with C = fused_segments_capacity(p), and
/// `run_segments(segments, block, thread, threads_per_block)`: thread `thread` of block `block`
/// runs its share of the grid-stride loop of the segment whose blocks hold `block` (segment k has
/// blocks [first_block[k], first_block[k + 1])).
std::string fused_segments_body(const FusedProgram& p, const FusedLayout& layout);

/// The whole source of a kernel that runs `p` over several operand sets in one launch (jit's
/// fused_elementwise_segments): fused_segments_body and the __global__ kSegmentsKernelName(Segments).
std::string fused_segments_source(const FusedProgram& p, const FusedLayout& layout);

/// A generated kernel's `canopy_fused::Args` as 8-byte words, written at `words`: the inputs' and
/// outputs' addresses, then n (in.size() + out.size() + 1 words).
void pack_args(std::uint64_t* words, std::span<const void* const> in, std::span<void* const> out, std::int64_t n);
/// The blocks of kThreads threads that n elements ask for (4 elements a thread under a vector layout).
std::int64_t blocks_wanted(std::int64_t n, bool vector);

/// A launch of a segments kernel: its parameter (a Segments, as 8-byte words) and its grid.
struct SegmentsLaunch {
  std::vector<std::uint64_t> param;
  std::int64_t blocks = 0;
};
/// The launch of segment k = programs[k] over its operands (in and out: every segment's operands
/// one after another, each segment as many as programs[k] has), under `layout`: each segment gets
/// the blocks its elements ask for (kThreads threads each, 4 elements a thread under a vector
/// layout), or, where they ask for more than max_blocks in all, a share of max_blocks in
/// proportion, at least one. Requires 1 <= programs.size() <= fused_segments_capacity.
SegmentsLaunch segments_launch(std::span<const FusedProgram* const> programs, const FusedLayout& layout,
                               std::span<const void* const> in, std::span<void* const> out, std::int64_t max_blocks);

/// The headers a generated kernel is compiled with, as one text for NVRTC (which has no include
/// path into canopy's sources): nvrtc_std.hpp, then the library's element math and what it
/// needs, each header's #include and #pragma once lines dropped (the list, in include order, is
/// kernels/meson.build's element_math_headers, after nvrtc_std.hpp).
const std::string& nvrtc_prelude();
/// The paths of those headers in the source tree, in order (for tests that compile a body for the host).
std::vector<std::string> embedded_header_paths();

/// An exact key of what a program's source depends on (its inputs, steps, outputs and layout),
/// cheaper to build than the source: the launcher's cache of loaded kernels is keyed by it.
std::string program_key(const FusedProgram& p, const FusedLayout& layout);

}  // namespace canopy::kernels::cuda::generated
