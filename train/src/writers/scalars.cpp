// The Writer base, the clocks writers read, and to_scalars: Arrays to host doubles before any
// writer sees them.
#include <chrono>

#include "canopy/train/writers.hpp"

namespace canopy {

Writer::~Writer() = default;
void Writer::write_text(std::int64_t, std::string_view, std::string_view) {}
void Writer::flush() {}

double system_wall_time() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

namespace {
double scalar_value(const std::string& name, const Array& a) {
  if (!a.valid()) detail::raise<ValueError>("to_scalars", "metric", name, "is an empty Array handle");
  if (a.is_tracer())
    detail::raise<TracerError>("to_scalars", "metric", name, detail::concat("is a tracer ", to_string(a.aval())),
                               "return it from the jitted step and log the concrete value");
  if (a.size() != 1)
    detail::raise<ShapeError>("to_scalars", "metric", name, detail::concat("is ", to_string(a.aval()), ", not a scalar"),
                              "reduce it (mean, sum) before logging");
  return a.item<double>();
}

template <class Range>
Scalars convert(const Range& metrics) {
  Scalars out;
  for (const auto& [name, value] : metrics) out.emplace_back(name, scalar_value(name, value));
  return out;
}
}  // namespace

Scalars to_scalars(std::initializer_list<std::pair<std::string, Array>> metrics) { return convert(metrics); }
Scalars to_scalars(const std::vector<std::pair<std::string, Array>>& metrics) { return convert(metrics); }

Scalars to_scalars(const NamedArrays& metrics) { return convert(metrics); }

}  // namespace canopy
