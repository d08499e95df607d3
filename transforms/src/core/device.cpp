// Device parsing and printing.
#include <charconv>

#include "canopy/device.hpp"
#include "canopy/error.hpp"
#include "device_backend.hpp"

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
  Device::Kind k{};
  if (detail::backend_named(kind, &k)) return Device{k, index};
  detail::raise<DeviceError>("Device::parse", "device", std::string(s), "is not a known device kind",
                             "use cpu:k or cuda:k");
}

std::string to_string(Device d) {
  return detail::concat(detail::backend(d.kind).name, ":", d.index);
}

}  // namespace canopy
