// Lowered::profile: a compiled program's kernels timed over several calls on the arguments it was
// lowered with, and the table that prints them (per step, then per primitive).
#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>

#include "../core/profiler_hooks.hpp"
#include "canopy/core/jit.hpp"

namespace canopy {

profiler::ProgramProfile Lowered::profile(int calls) const {
  if (calls < 1)
    detail::raise<ProfilerError>("profile", "calls", std::to_string(calls), "must be at least 1");
  for (std::size_t i = 0; i < arguments.size(); ++i)
    detail::require_live("profile", "argument leaf " + std::to_string(i), arguments[i]);
  executable->run(arguments);  // warm-up: caches, primitives, first touch of fresh pages
  profiler::detail::LocalRecording recording;
  const int base = profiler::detail::LocalRecording::depth();
  for (int c = 0; c < calls; ++c) executable->run(arguments);
  const std::vector<profiler::Event> events = recording.take();

  profiler::ProgramProfile p;
  p.program = "jit(" + executable->name() + ")";
  p.calls = calls;
  std::map<int, profiler::ProgramProfile::Step> steps;
  int position = 0;  // a GPU program's kernels run as eager ops: numbered in call order
  for (const profiler::Event& e : events) {
    const double seconds = static_cast<double>(e.end_ns - e.start_ns) * 1e-9 / calls;
    if (e.depth == base && e.kind == profiler::Event::Kind::call) {
      p.call_seconds += seconds;
      position = 0;
      continue;
    }
    if (e.depth != base + 1) continue;  // inside a nested call: counted in that call's step
    const int k = e.step >= 0 ? e.step : position++;
    auto [it, fresh] = steps.try_emplace(k);
    if (fresh) it->second = {k, e.primitive.empty() ? e.name : e.primitive, e.params, e.shapes, 0.0};
    it->second.seconds += seconds;
  }
  for (auto& [k, s] : steps) p.steps.push_back(std::move(s));
  return p;
}

namespace profiler {
namespace {

std::string milliseconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", s * 1e3);
  return buf;
}
std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%5.1f %%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}
std::string padded(std::string s, std::size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

std::string shortened(std::string s, std::size_t width) {
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}

/// `fused_elementwise[mul,add,tanh]` for a pass's equation (params `ops=...`), else the primitive.
std::string kernel_label(const ProgramProfile::Step& s) {
  if (s.params.rfind("ops=", 0) != 0) return s.primitive;
  return s.primitive + "[" + shortened(s.params.substr(4), 48) + "]";
}
/// The shapes, the middle elided past 72 characters (a fused kernel of many operands).
std::string shapes_label(const ProgramProfile::Step& s) {
  if (s.shapes.size() <= 72) return s.shapes;
  return s.shapes.substr(0, 34) + " ... " + s.shapes.substr(s.shapes.size() - 33);
}

}  // namespace

std::string ProgramProfile::table() const {
  double kernels = 0;
  for (const Step& s : steps) kernels += s.seconds;
  std::string out = program + ": " + std::to_string(calls) + " calls, " + milliseconds(call_seconds) +
                    " ms per call; kernels " + milliseconds(kernels) + " ms (" + percent(kernels, call_seconds) +
                    "), outside kernels " + milliseconds(std::max(0.0, call_seconds - kernels)) + " ms\n";
  std::size_t kw = 6, sw = 6;
  for (const Step& s : steps) {
    kw = std::max(kw, kernel_label(s).size());
    sw = std::max(sw, shapes_label(s).size());
  }
  out += padded("step", 5, true) + "  " + padded("kernel", kw) + "  " + padded("shapes", sw) + "  " +
         padded("ms/call", 9, true) + "  " + padded("share", 7, true) + "\n";
  for (const Step& s : steps)
    out += padded(std::to_string(s.step), 5, true) + "  " + padded(kernel_label(s), kw) + "  " + padded(shapes_label(s), sw) +
           "  " + padded(milliseconds(s.seconds), 9, true) + "  " + percent(s.seconds, call_seconds) + "\n";
  // Per primitive, largest first.
  std::map<std::string, std::pair<int, double>> by;
  for (const Step& s : steps) {
    auto& [n, t] = by[s.primitive];
    ++n;
    t += s.seconds;
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> rows(by.begin(), by.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::size_t pw = 9;
  for (const auto& r : rows) pw = std::max(pw, r.first.size());
  out += padded("primitive", pw) + "  " + padded("steps", 5, true) + "  " + padded("ms/call", 9, true) + "  " +
         padded("share", 7, true) + "\n";
  for (const auto& [name, nt] : rows)
    out += padded(name, pw) + "  " + padded(std::to_string(nt.first), 5, true) + "  " + padded(milliseconds(nt.second), 9, true) +
           "  " + percent(nt.second, call_seconds) + "\n";
  return out;
}

std::ostream& operator<<(std::ostream& os, const ProgramProfile& p) { return os << p.table(); }

}  // namespace profiler
}  // namespace canopy
