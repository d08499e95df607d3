// Trigger parts: their argument checks, their firing rules and their printed form.
#include "canopy/train/triggers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "canopy/train/error.hpp"

namespace canopy {
namespace {

using Kind = detail::TriggerPart::Kind;

void require_positive(std::string_view api, std::string_view arg, std::int64_t v) {
  if (v <= 0) detail::raise<ValueError>(api, arg, std::to_string(v), "must be positive");
}

bool is_power_of_ten(std::int64_t q) {
  while (q % 10 == 0) q /= 10;
  return q == 1;
}

bool part_fires(detail::TriggerPart& p, std::int64_t step, TimePoint now) {
  switch (p.kind) {
    case Kind::every_steps:
      return step > 0 && step % p.n == 0;
    case Kind::every_seconds:
      if (!p.last) {
        p.last = now;
        return p.fire_at_start;
      }
      if (now - *p.last >= p.interval) {
        p.last = now;
        return true;
      }
      return false;
    case Kind::at_steps:
      return std::binary_search(p.values.begin(), p.values.end(), step);
    case Kind::first_steps:
      return step >= 1 && step <= p.n;
    case Kind::first_steps_of_process:
      return ++p.checks <= p.n;
    case Kind::growth_steps:
      if (step <= 0) return false;
      for (std::int64_t r : p.values)
        if (step % r == 0 && is_power_of_ten(step / r)) return true;
      return false;
    case Kind::at_end:
      return step == p.n;
  }
  return false;
}

void describe_part(std::ostream& os, const detail::TriggerPart& p) {
  auto list = [&](const std::vector<std::int64_t>& v) {
    os << '{';
    for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
    os << '}';
  };
  switch (p.kind) {
    case Kind::every_steps: os << "every_steps(" << p.n << ')'; break;
    case Kind::every_seconds:
      os << "every_seconds(" << std::chrono::duration<double>(p.interval).count()
         << (p.fire_at_start ? ", fire_at_start" : "") << ')';
      break;
    case Kind::at_steps: os << "at_steps("; list(p.values); os << ')'; break;
    case Kind::first_steps: os << "first_steps(" << p.n << ')'; break;
    case Kind::first_steps_of_process: os << "first_steps_of_process(" << p.n << ')'; break;
    case Kind::growth_steps: os << "growth_steps("; list(p.values); os << ')'; break;
    case Kind::at_end: os << "at_end(" << p.n << ')'; break;
  }
}

Trigger of(Kind kind, std::int64_t n) {
  detail::TriggerPart p;
  p.kind = kind;
  p.n = n;
  return Trigger(std::move(p));
}

Trigger of_values(Kind kind, std::vector<std::int64_t> values) {
  detail::TriggerPart p;
  p.kind = kind;
  p.values = std::move(values);
  return Trigger(std::move(p));
}

}  // namespace

bool Trigger::fires(std::int64_t step, TimePoint now) {
  if (step < 0) detail::raise<ValueError>("Trigger::fires", "step", std::to_string(step), "is negative");
  bool any = false;
  for (detail::TriggerPart& p : parts_) any = part_fires(p, step, now) || any;  // every part sees every check
  return any;
}

std::string Trigger::describe() const {
  if (parts_.empty()) return "never";
  std::ostringstream os;
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    if (i) os << " | ";
    describe_part(os, parts_[i]);
  }
  return os.str();
}

Trigger& Trigger::operator|=(const Trigger& b) {
  parts_.insert(parts_.end(), b.parts_.begin(), b.parts_.end());
  return *this;
}

Trigger every_steps(std::int64_t n) {
  require_positive("every_steps", "n", n);
  return of(Kind::every_steps, n);
}

Trigger every_seconds(double seconds, EverySecondsOptions options) {
  // The interval is kept in clock ticks so the boundary test `now - last >= interval` is exact.
  constexpr double max_seconds =
      static_cast<double>(std::numeric_limits<TimePoint::rep>::max() / 2) * TimePoint::period::num / TimePoint::period::den;
  if (!(seconds > 0) || !std::isfinite(seconds) || seconds > max_seconds)
    detail::raise<ValueError>("every_seconds", "seconds", detail::concat(seconds),
                              "must be a positive finite number of seconds the clock can count");
  detail::TriggerPart p;
  p.kind = Kind::every_seconds;
  p.interval = std::max(TimePoint::duration{1}, std::chrono::round<TimePoint::duration>(std::chrono::duration<double>(seconds)));
  p.fire_at_start = options.fire_at_start;
  return Trigger(std::move(p));
}

Trigger at_steps(std::vector<std::int64_t> steps) {
  for (std::int64_t s : steps)
    if (s < 0) detail::raise<ValueError>("at_steps", "step", std::to_string(s), "is negative");
  std::sort(steps.begin(), steps.end());
  return of_values(Kind::at_steps, std::move(steps));
}

Trigger first_steps(std::int64_t n) {
  require_positive("first_steps", "n", n);
  return of(Kind::first_steps, n);
}

Trigger first_steps_of_process(std::int64_t n) {
  require_positive("first_steps_of_process", "n", n);
  return of(Kind::first_steps_of_process, n);
}

Trigger growth_steps(std::vector<std::int64_t> ratios) {
  if (ratios.empty()) detail::raise<ValueError>("growth_steps", "ratios", "{}", "is empty", "JAXline's default is {1, 2, 5}");
  for (std::int64_t r : ratios) require_positive("growth_steps", "ratio", r);
  return of_values(Kind::growth_steps, std::move(ratios));
}

Trigger at_end(std::int64_t total_steps) {
  require_positive("at_end", "total_steps", total_steps);
  return of(Kind::at_end, total_steps);
}

}  // namespace canopy
