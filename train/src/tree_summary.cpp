// Key paths written simply, parameter counts and the shape summary of a tree's Array leaves.
#include "canopy/train/tree_utils.hpp"

#include <algorithm>
#include <sstream>

#include <canopy/core/aval.hpp>

namespace canopy {

std::string simple_keystr(const KeyPath& path, std::string_view sep) {
  std::string s;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (i) s.append(sep);
    const KeyEntry& k = path[i];
    if (k.kind == KeyEntry::Kind::field || k.kind == KeyEntry::Kind::string_key) s.append(k.name);
    else s.append(std::to_string(k.id));
  }
  return s;
}

std::int64_t parameter_count(const NamedArrays& arrays) {
  std::int64_t n = 0;
  for (const NamedArray& a : arrays) n += a.value.size();
  return n;
}

std::int64_t parameter_bytes(const NamedArrays& arrays) {
  std::int64_t n = 0;
  for (const NamedArray& a : arrays) n += a.value.size() * static_cast<std::int64_t>(itemsize(a.value.dtype()));
  return n;
}

std::string shape_summary(const NamedArrays& arrays) {
  std::size_t width = 0;
  for (const NamedArray& a : arrays) width = std::max(width, a.name.size());
  std::ostringstream os;
  for (const NamedArray& a : arrays) {
    os << a.name << std::string(width - a.name.size() + 2, ' ') << name(a.value.dtype()) << to_string(a.value.shape())
       << '\n';
  }
  os << "total: " << parameter_count(arrays) << " parameters (" << parameter_bytes(arrays) << " bytes)\n";
  return os.str();
}

}  // namespace canopy
