// jit's settings (CANOPY_DISABLE_JIT, CANOPY_EXPLAIN_CACHE_MISSES, disable_jit scopes), its log
// messages, and staging a flat function.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

#include "../core/array_impl.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/environment.hpp"
#include "canopy/matmul_precision.hpp"
#include "canopy/random.hpp"
#include "canopy/x64.hpp"
#include "passes/passes.hpp"

namespace canopy {
namespace {

constinit kernels::EnvSwitch explain_flag{"CANOPY_EXPLAIN_CACHE_MISSES", false};
constinit kernels::EnvSwitch disabled_by_env{"CANOPY_DISABLE_JIT", false};
thread_local bool disabled_here = false;

std::mutex log_mutex;
std::function<void(const std::string&)>& log_handler() {
  static std::function<void(const std::string&)> h;
  return h;
}

}  // namespace

void set_explain_cache_misses(bool on) { explain_flag.set(on); }
bool explain_cache_misses() { return explain_flag.get(); }

void set_log_handler(std::function<void(const std::string&)> handler) {
  std::lock_guard<std::mutex> lock(log_mutex);
  log_handler() = std::move(handler);
}

DisableJit::DisableJit() : previous_(disabled_here) { disabled_here = true; }
DisableJit::~DisableJit() { disabled_here = previous_; }

namespace detail {

void log_message(const std::string& message) {
  std::lock_guard<std::mutex> lock(log_mutex);
  if (log_handler()) log_handler()(message);
  else std::cerr << "canopy: " << message << '\n';
}

bool jit_enabled() { return !disabled_here && !disabled_by_env.get(); }

std::pair<std::shared_ptr<const Executable>, Arrays> compile_closed(const FlatFn& f, const std::vector<Aval>& avals,
                                                                    const std::string& name) {
  Program p = stage(f, avals);
  Arrays consts = hoist_traced_consts(p);
  std::vector<int> order;
  const std::size_t m = p.in_vars.size() - consts.size();
  for (std::size_t i = 0; i < consts.size(); ++i) order.push_back(static_cast<int>(m + i));
  for (std::size_t i = 0; i < m; ++i) order.push_back(static_cast<int>(i));
  return {std::make_shared<const Executable>(permute_inputs(p, order), name), std::move(consts)};
}

void fold_scalar_constants(Program& p) { fold_constants(p, 1); }

Arrays hoist_traced_consts(Program& p) {
  Arrays captured;
  std::vector<int> var_of_const(p.consts.size(), -1);
  for (std::size_t c = 0; c < p.consts.size(); ++c) {
    if (!p.consts[c].is_tracer()) continue;
    var_of_const[c] = p.new_var(p.consts[c].aval());
    p.in_vars.push_back(var_of_const[c]);
    captured.push_back(p.consts[c]);
    p.consts[c] = Array();
  }
  if (captured.empty()) return captured;
  p.for_each_atom([&](Atom& a) {
    if (a.is_constant() && var_of_const[a.index] >= 0) a = Atom::variable(var_of_const[a.index]);
  });
  p.drop_unused_consts();  // the emptied slots
  return captured;
}

void donate(const Arrays& donated, const Arrays& results, const Arrays& kept,
            const std::shared_ptr<const std::vector<std::string>>& names) {
  for (std::size_t i = 0; i < donated.size(); ++i) {
    const Array& x = donated[i];
    if (x.is_tracer()) continue;  // donation means nothing to a transformation that traces the call
    bool returned = false;
    for (const Array& y : results) returned = returned || y.impl() == x.impl();
    for (const Array& y : kept) returned = returned || (y.valid() && y.impl() == x.impl());
    if (returned) continue;
    x.impl()->deleted = true;
    x.impl()->buffer.reset();
    if (names && i < names->size()) x.impl()->donated_as = std::shared_ptr<const std::string>(names, &(*names)[i]);
  }
}

void require_live(std::string_view api, const std::string& where, const Array& x) {
  if (!x.is_deleted()) return;
  const auto& as = x.impl()->donated_as;
  raise<TracerError>(api, "array", where,
                     concat(to_string(x.aval()), " was donated to a jitted call (donate_argnums)",
                            as ? concat(" as ", *as) : std::string(), " and deleted"),
                     "use the call's result instead, or do not donate it");
}

std::uint32_t tracing_settings() {
  return static_cast<std::uint32_t>(random::current_layout()) | (x64_enabled() ? kX64SettingBit : 0u) |
         (default_matmul_precision_bits() << kMatmulPrecisionSettingShift);
}

}  // namespace detail
}  // namespace canopy
