// jit's pass pipeline: the list of passes and the one loop that runs them.
#include "pipeline.hpp"

#include <string>

#include "../../core/ir/verify.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/environment.hpp"
#include "passes.hpp"

namespace canopy::detail {
namespace {

constinit kernels::EnvSwitch verify_flag{"CANOPY_VERIFY_PASSES", false};
constinit kernels::EnvSwitch dump_flag{"CANOPY_DUMP_PASSES", false};

using enum PassStage;
using enum PassNeeds;
constexpr Targets kCpu = target(Device::Kind::cpu), kCuda = target(Device::Kind::cuda);

// The simplifications first (every device's program starts from their result), then each
// device's lowering: the epilogue pass must see the matmuls before elementwise fusion takes
// their tails. A new pass is a file of this folder, its declaration in passes.hpp, a row here
// and its case in tests/jit_passes_test.cpp.
constexpr Pass kPasses[] = {
    // Before the chains are combined: the reshape a key taken out of a split becomes joins the
    // reshape that follows it.
    {"split_keys_as_fold_ins", split_keys_as_fold_ins, kEveryTarget, simplify, nothing},
    // Chains combined before folding: a broadcast of a broadcast of a scalar stays a broadcast of
    // that scalar (a fused loop's scalar input) instead of being folded into a short vector first.
    {"combine_reshapes_and_broadcasts", combine_reshapes_and_broadcasts, kEveryTarget, simplify, nothing},
    {"fold_constants", [](Program& p) { fold_constants(p); }, kEveryTarget, simplify, nothing},
    {"eliminate_common_subexpressions", eliminate_common_subexpressions, kEveryTarget, simplify, nothing},
    {"eliminate_dead_code", eliminate_dead_code, kEveryTarget, simplify, nothing},
    {"fuse_epilogues", fuse_epilogues, kCpu, lower, epilogues},
    {"fuse_elementwise", fuse_elementwise, kCpu, lower, fusion},
    {"fuse_epilogues_for_cuda", fuse_epilogues_for_cuda, kCuda, lower, epilogues},
    {"fuse_bias_gradients_for_cuda", fuse_bias_gradients_for_cuda, kCuda, lower, epilogues},
    {"fuse_conv_bias_for_cuda", fuse_conv_bias_for_cuda, kCuda, lower, epilogues},
    // One-element steps first: elementwise fusion would make each f32 chain of them a kernel.
    {"fuse_scalars_for_cuda", fuse_scalars_for_cuda, kCuda, lower, fusion},
    {"fuse_elementwise_for_cuda", fuse_elementwise_for_cuda, kCuda, lower, fusion},
    {"fuse_segments_for_cuda", fuse_segments_for_cuda, kCuda, lower, fusion},
};

bool enabled(PassNeeds needs, const PassOptions& options) {
  switch (needs) {
    case nothing: return true;
    case fusion: return options.fusion;
    case epilogues: return options.fusion && options.epilogues;
  }
  return false;
}

}  // namespace

void set_verify_passes(bool on) { verify_flag.set(on); }
bool verify_passes() { return verify_flag.get(); }
void set_dump_passes(bool on) { dump_flag.set(on); }
bool dump_passes() { return dump_flag.get(); }

std::span<const Pass> passes() { return kPasses; }

const Pass& pass_named(std::string_view name) {
  std::string known;
  for (const Pass& pass : kPasses) {
    if (pass.name == name) return pass;
    known += (known.empty() ? "" : ", ") + std::string(pass.name);
  }
  raise<ValueError>("pass_named", "pass", name, "is not one of jit's passes", "they are " + known);
}

void run_passes(Program& p, PassStage stage, Targets targets, const PassOptions& options, std::string_view program_name) {
  const bool verify = verify_passes(), dump = dump_passes();
  bool first = true;
  for (const Pass& pass : kPasses) {
    if (pass.stage != stage || (pass.targets & targets) != targets || !enabled(pass.needs, options)) continue;
    if (verify && first) verify_program(p, concat("jit(", program_name, ") before ", pass.name));
    first = false;
    pass.run(p);
    if (verify) verify_program(p, concat("jit(", program_name, ") after ", pass.name));
    if (dump) log_message(concat("jit(", program_name, ") after ", pass.name, ":\n", to_string(p)));
  }
}

}  // namespace canopy::detail
