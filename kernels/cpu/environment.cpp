// Reading CANOPY_* settings (canopy/kernels/environment.hpp): one grammar for every switch and
// every integer, and one error for a value outside it.
#include "canopy/kernels/environment.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

#include "canopy/error.hpp"

namespace canopy::kernels {

bool env_switch(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  std::string lower(v);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* on : {"1", "true", "yes", "on"})
    if (lower == on) return true;
  for (const char* off : {"0", "false", "no", "off"})
    if (lower == off) return false;
  detail::raise<ValueError>(name, "environment variable", detail::concat("= '", v, "'"), "is not a switch",
                            "set 1, true, yes or on; 0, false, no or off; or leave it unset");
}

std::int64_t env_integer(const char* name, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  const std::string_view s(v);
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n < lo || n > hi)
    detail::raise<ValueError>(name, "environment variable", detail::concat("= '", s, "'"), "is not an integer in range",
                              detail::concat("set an integer from ", lo, " to ", hi, ", or leave it unset"));
  return n;
}

std::size_t env_choice(const char* name, std::size_t fallback, std::initializer_list<const char*> words) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  std::string lower(v), listed;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t index = 0;
  for (const char* w : words) {
    if (lower == w) return index;
    listed += detail::concat(index++ == 0 ? "" : ", ", w);
  }
  detail::raise<ValueError>(name, "environment variable", detail::concat("= '", v, "'"), "is not one of its values",
                            detail::concat("set one of ", listed, "; or leave it unset"));
}

}  // namespace canopy::kernels
