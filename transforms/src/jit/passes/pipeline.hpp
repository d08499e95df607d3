// jit's passes as one list: each pass's name, function, the device kinds it is for and what turns
// it on, run in order by run_passes, with the program verified and printed after each on request.
#pragma once

#include <span>
#include <string_view>

#include "canopy/core/ir.hpp"
#include "canopy/device.hpp"

namespace canopy::detail {

/// Whether run_passes verifies the program before the first pass and after each (verify_program:
/// a ProgramError naming the pass that broke it). Off by default (the test suites turn it on);
/// on when the environment sets CANOPY_VERIFY_PASSES=1. Applies to programs compiled afterwards.
void set_verify_passes(bool on);
bool verify_passes();
/// Whether run_passes prints the program after each pass as jaxpr text, headed `jit(f) after
/// <pass>:`, through the log handler (standard error by default). Off by default; on when the
/// environment sets CANOPY_DUMP_PASSES=1. Applies to programs compiled afterwards.
void set_dump_passes(bool on);
bool dump_passes();

/// A set of device kinds, one bit each.
using Targets = unsigned;
constexpr Targets target(Device::Kind kind) { return 1u << static_cast<unsigned>(kind); }
constexpr Targets kEveryTarget = target(Device::Kind::cpu) | target(Device::Kind::cuda);

/// Where a pass's result goes: the simplified program (what transformations of a compiled call
/// start from, and what each device's program is lowered from), or the program one device runs.
enum class PassStage : unsigned char { simplify, lower };

/// What a pass needs switched on: nothing, fusion (the Executable's `fuse`), or fusion and
/// epilogue fusion.
enum class PassNeeds : unsigned char { nothing, fusion, epilogues };

/// One pass of the list: what it is called (in dumps, errors and tests), what it does to a
/// program, and when it runs.
struct Pass {
  std::string_view name;
  void (*run)(Program& p);
  Targets targets;  ///< the device kinds whose programs it changes
  PassStage stage;
  PassNeeds needs;
};

/// Every pass, in the order they run.
std::span<const Pass> passes();
/// The pass called `name` (a ValueError naming the known ones otherwise).
const Pass& pass_named(std::string_view name);

/// What a compiled program asked for.
struct PassOptions {
  bool fusion = false;
  bool epilogues = false;  ///< only with fusion
};

/// Runs on `p`, in order, every pass of `stage` for all the device kinds of `targets` that
/// `options` turn on. Under verify_passes() the program is verified before the first and after
/// each pass (a ProgramError naming `program_name` and the pass); under dump_passes() it is
/// printed after each.
void run_passes(Program& p, PassStage stage, Targets targets, const PassOptions& options, std::string_view program_name);

}  // namespace canopy::detail
