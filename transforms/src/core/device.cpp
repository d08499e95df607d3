// Device parsing and printing.
#include <charconv>

#include "canopy/device.hpp"
#include "canopy/error.hpp"

namespace canopy {

Device Device::parse(std::string_view s) {
  auto colon = s.find(':');
  std::string_view kind = s.substr(0, colon);
  int index = 0;
  if (colon != std::string_view::npos) {
    auto rest = s.substr(colon + 1);
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
    if (ec != std::errc() || p != rest.data() + rest.size() || index < 0)
      detail::raise<DeviceError>("Device::parse", "device", std::string(s), "has a bad index", "write cpu:0 or cuda:1");
  }
  if (kind == "cpu") return cpu(index);
  if (kind == "cuda" || kind == "gpu") return cuda(index);
  detail::raise<DeviceError>("Device::parse", "device", std::string(s), "is not a known device kind",
                             "use cpu:k or cuda:k");
}

std::string to_string(Device d) {
  return std::string(d.kind == Device::Kind::cpu ? "cpu:" : "cuda:") + std::to_string(d.index);
}

}  // namespace canopy
