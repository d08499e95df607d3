// The type-erased core of jit: staging a flat function into a Program, simplifying and compiling
// it into an Executable, and applying it (directly when its inputs are concrete, as a jit_call
// primitive when a transformation or an enclosing jit is tracing). <canopy/transforms/jit.hpp>
// builds the pytree front end and the cache on top.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <span>
#include <string>
#include <vector>

#include "canopy/core/autodiff.hpp"
#include "canopy/core/ir.hpp"
#include "canopy/profiler.hpp"

namespace canopy {

struct PrimitiveInfo;
struct ParamsRef;

/// What a compiled program's buffers take, in bytes (jax's `compiled.memory_analysis()`).
struct MemoryAnalysis {
  std::int64_t argument_bytes = 0;  ///< the inputs
  std::int64_t output_bytes = 0;    ///< the results
  /// The intermediates' arena after buffer planning: the most of them live at once. Outputs of
  /// nested jitted calls are not in it (each call plans its own).
  std::int64_t temp_bytes = 0;
  /// The same intermediates each in a buffer of its own (what planning saves against).
  std::int64_t temp_unplanned_bytes = 0;
  /// Results that take a donated input's buffer (donate_argnums) instead of a new one.
  std::int64_t alias_bytes = 0;
};

/// A Program simplified (constant folding, common subexpressions, dead code) and prepared to
/// run: each equation's kernel, operands and results resolved to slots, intermediates released
/// after their last use. Immutable once built; run() may be called from several threads at once.
class Executable {
 public:
  /// Simplifies `program` and prepares it. `name` is what jaxpr text and errors call it.
  /// Elementwise chains are fused when `fuse` (by default, when elementwise_fusion() is on).
  Executable(Program program, std::string name);
  Executable(Program program, std::string name, bool fuse);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  /// Runs on concrete inputs of the program's input avals; returns its outputs. Intermediates live
  /// in one arena per call (buffer planning). `donated[i]` marks input i as given up by the caller
  /// (jit's donate_argnums): a result of its shape and dtype written after its last use takes its
  /// buffer, when no other array shares that buffer; the caller then deletes the input.
  Arrays run(std::span<const Array> inputs, const std::vector<bool>& donated = {}) const;
  /// Buffer sizes: inputs, outputs, the intermediates' arena, and the results that take donated
  /// inputs' buffers under the mask `donated` (as run), of the program that runs on devices of
  /// `kind` (the compiled program on a CPU, gpu_program() on a GPU; planned without a device).
  MemoryAnalysis memory_analysis(const std::vector<bool>& donated = {}, Device::Kind kind = Device::Kind::cpu) const;
  /// The simplified program (what transformations of the compiled call start from).
  const Program& program() const { return program_; }
  /// The program that runs: the simplified one with its elementwise chains fused.
  const Program& compiled_program() const { return compiled_; }
  /// The program run() runs when its arguments are on a GPU (outside debug_nans): the simplified
  /// one with jit's GPU passes applied (matmuls with their bias and relu for cuBLASLt, then
  /// elementwise chains), built on first use.
  const Program& gpu_program() const;
  /// The arrays the compiled program holds as constants.
  const Arrays& constants() const { return compiled_.consts; }
  const std::string& name() const { return name_; }
  /// Number of equations run per call.
  std::size_t num_steps() const;
  /// Something derived from this program (its jvp split, transpose, batched form), built by
  /// `build` the first time `key` is asked for and shared by later calls.
  std::shared_ptr<const void> derived(const std::string& key, const std::function<std::shared_ptr<const void>()>& build) const;

 private:
  struct Plan;
  /// The GPU program, fused or not, derived once each.
  std::shared_ptr<const Program> gpu_program(bool fuse) const;
  /// The plan of the GPU program (fused or not) for devices of `kind`, and a copy of it with its
  /// constants on `device`; derived once each.
  std::shared_ptr<const Plan> device_plan(Device::Kind kind, bool fuse) const;
  std::shared_ptr<const Plan> device_plan(const Device& device, bool fuse) const;
  Program program_;
  Program compiled_;
  bool fuse_ = false;       ///< fusion passes were asked for (the `fuse` argument)
  bool epilogues_ = false;  ///< and epilogue fusion was on then
  bool fused_ = false;  ///< compiled_ holds a fused_elementwise equation
  std::string name_;
  std::unique_ptr<const Plan> plan_;
  mutable std::mutex derived_mutex_;
  mutable std::unordered_map<std::string, std::shared_ptr<const void>> derived_;
};

/// A compiled program for given arguments (jax's Lowered/Compiled): its simplified program.
struct Lowered {
  std::shared_ptr<const Executable> executable;
  /// Per input of the program: whether the call donates it (donate_argnums).
  std::vector<bool> donated;
  /// The program's inputs for the arguments it was lowered with (their Array leaves, then the
  /// arrays f captured): what profile() runs it on.
  Arrays arguments;
  /// Buffer sizes of the compiled program (jax's `compile().memory_analysis()`), on a CPU or
  /// (gpu_program()'s plan) on a GPU.
  MemoryAnalysis memory_analysis(Device::Kind kind = Device::Kind::cpu) const {
    return executable->memory_analysis(donated, kind);
  }
  /// The simplified program as jaxpr text.
  std::string as_text() const { return to_string(executable->program()); }
  /// The program that runs, fused_elementwise equations included (jax's `compile().as_text()`).
  std::string compiled_text() const { return to_string(executable->compiled_program()); }
  /// The program that runs when the arguments are on a GPU (jit's GPU passes applied).
  std::string gpu_text() const { return to_string(executable->gpu_program()); }
  const Program& program() const { return executable->program(); }
  /// Runs the compiled program on `arguments` once to warm up, then `calls` times with every
  /// kernel timed (nothing donated, whatever donate_argnums says): per step its kernel, shapes
  /// and mean time, printed as a table by `std::cout << lowered.profile()`.
  profiler::ProgramProfile profile(int calls = 10) const;
};

namespace detail {

/// Records f on fresh inputs of `in_avals` (tracers of a staging trace). Tracers of enclosing
/// transformations that f captures stay among the constants (see hoist_traced_consts).
Program stage(const FlatFn& f, const std::vector<Aval>& in_avals);

/// f staged on `avals` and compiled, the tracers of enclosing transformations it captured made
/// its first inputs (returned, to be passed as the first operands): a control-flow body.
std::pair<std::shared_ptr<const Executable>, Arrays> compile_closed(const FlatFn& f, const std::vector<Aval>& avals,
                                                                    const std::string& name);

/// Folds the equations on constant scalars (make_jaxpr's only simplification).
void fold_scalar_constants(Program& p);

/// Applies a compiled function to `args`: runs it when every arg is concrete and no
/// transformation is active, else binds jit_call so the innermost trace handles it.
/// `donated` as Executable::run's, for the concrete case.
Arrays apply_executable(const std::shared_ptr<const Executable>& exe, std::span<const Array> args,
                        const std::vector<bool>& donated = {});

/// The executable a call primitive's params hold.
const Executable* executable_of(const PrimitiveInfo& p, const ParamsRef& params);

/// Whether jit stages functions (false under CANOPY_DISABLE_JIT=1 or inside a DisableJit scope).
bool jit_enabled();

/// Turns constants that are tracers of enclosing transformations into extra inputs of `p`
/// (closure conversion); returns them in order.
Arrays hoist_traced_consts(Program& p);

/// Deletes the Array leaves of donated arguments that are not also results, nor `kept` (what the
/// compiled call holds on to: its constants and captured arrays, which later calls read again).
/// `names` (one per donated leaf) say in a later use's error where each went.
void donate(const Arrays& donated, const Arrays& results, const Arrays& kept = {},
            const std::shared_ptr<const std::vector<std::string>>& names = {});
/// TracerError naming `api` and `where` unless x is live (not donated to an earlier call).
void require_live(std::string_view api, const std::string& where, const Array& x);

/// FloatingPointError naming p (and `program`, the jitted function it ran in, if any) when one
/// of its floating-point results holds a NaN.
void check_nans(const PrimitiveInfo& p, std::span<const Array> outs, const std::string& program = {});

/// Hands a diagnostic line (cache-miss explanations, retrace warnings) to the log handler.
void log_message(const std::string& message);

}  // namespace detail

/// Whether each retrace of a jitted function logs why (JAX's explain_cache_misses); initially
/// true when the environment sets CANOPY_EXPLAIN_CACHE_MISSES=1.
void set_explain_cache_misses(bool on);
bool explain_cache_misses();
/// Where canopy's diagnostic lines go (default: standard error, prefixed `canopy: `); an empty
/// function restores the default.
void set_log_handler(std::function<void(const std::string&)> handler);
/// Whether every primitive's results are checked for NaNs, eagerly and inside compiled programs
/// (jax_debug_nans); initially true when the environment sets CANOPY_DEBUG_NANS=1.
void set_debug_nans(bool on);
bool debug_nans();
/// Whether jit fuses chains of elementwise primitives into one kernel (on by default; off when
/// the environment sets CANOPY_JIT_FUSION=0). Applies to programs compiled afterwards.
void set_elementwise_fusion(bool on);
bool elementwise_fusion();
/// Whether jit folds the elementwise steps after a matmul (bias, scale, addend, tanh...) into it
/// as oneDNN post-ops (on by default, and only while elementwise fusion is on; off when the
/// environment sets CANOPY_JIT_EPILOGUES=0). Applies to programs compiled afterwards.
void set_epilogue_fusion(bool on);
bool epilogue_fusion();
/// Whether jit builds each fused elementwise kernel of 2^14 elements or more into machine code with
/// the system C++ compiler (CANOPY_CXX, else `c++`), cached on disk (CANOPY_KERNEL_CACHE, else
/// ~/.cache/canopy/kernels) so that a program is compiled once per machine (a compiler run:
/// about 0.1-1 s). Same values as the interpreter, bit for bit; kernels the generator cannot write
/// (sums, rows, random streams, erf_inv) and a failed build stay interpreted. Off by default; on
/// when the environment sets CANOPY_JIT_CODEGEN=1. Applies to programs compiled afterwards.
void set_fused_codegen(bool on);
bool fused_codegen();
/// Whether a jitted call on a GPU runs its kernels as one CUDA graph: recorded at the second call
/// of a compiled program on a device (the first builds the libraries' plans and the generated
/// kernels), replayed with one launch after. The graph reads its inputs from blocks of its own
/// (an argument elsewhere is copied there first, unless it is the block a donated result came
/// back in) and writes its results to blocks of its own (copied out, except a donated input's
/// update, which stays in its block). Programs with control flow, callbacks, nested calls or
/// collectives, calls under gpu_verify(), debug_nans() or the profiler, and programs whose
/// recording failed run kernel by kernel (docs/reference/jit.md). By default only where the
/// launches a replay saves outweigh the copies it adds (DeviceGraphs::where_faster): a program of
/// one kernel over a large argument runs kernel by kernel. CANOPY_JIT_GRAPHS=0 turns graphs off,
/// =always records every program a graph can hold. Applies to calls made afterwards.
enum class DeviceGraphs : std::uint8_t {
  off,           ///< every call kernel by kernel
  where_faster,  ///< a graph where the launches it saves outweigh its copies (the default)
  always,        ///< a graph for every program one can hold
};
void set_device_graphs(DeviceGraphs mode);
/// on: DeviceGraphs::where_faster; off: DeviceGraphs::off.
void set_device_graphs(bool on);
DeviceGraphs device_graphs_mode();
/// Whether graphs are on at all (device_graphs_mode() is not DeviceGraphs::off).
bool device_graphs();
/// Empties the cache of every jitted function (compiled programs are traced again on next call).
void clear_jit_caches();

/// Runs everything eagerly for its lifetime on this thread (jax.disable_jit): jit(f) calls f.
class DisableJit {
 public:
  DisableJit();
  ~DisableJit();
  DisableJit(const DisableJit&) = delete;
  DisableJit& operator=(const DisableJit&) = delete;

 private:
  bool previous_;
};

}  // namespace canopy
