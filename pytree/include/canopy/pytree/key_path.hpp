// Key paths: the name of every leaf (`.layers[2].b`, `["lr"]`, `.0`) and keystr.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace canopy {

/// One step from a node to a child.
struct KeyEntry {
  enum class Kind : std::uint8_t {
    field,       ///< a named member: `.w`
    position,    ///< a member of a plain aggregate, by position: `.0`
    index,       ///< an element of a sequence or tuple: `[2]`
    string_key,  ///< a string map key: `["lr"]`
    int_key,     ///< an integer map key: `[7]`
  };
  Kind kind = Kind::index;
  std::string name;     ///< field name or string key
  std::int64_t id = 0;  ///< position, index or integer key

  static KeyEntry field(std::string_view n) { return {Kind::field, std::string(n), 0}; }
  static KeyEntry position(std::int64_t i) { return {Kind::position, {}, i}; }
  static KeyEntry index(std::int64_t i) { return {Kind::index, {}, i}; }
  static KeyEntry key(std::string_view k) { return {Kind::string_key, std::string(k), 0}; }
  static KeyEntry key(std::int64_t k) { return {Kind::int_key, {}, k}; }

  /// Appends this step as keystr writes it (appending, not `"." + name`, sidesteps GCC 12's
  /// false -Wrestrict on string concatenation at -O3).
  void append_to(std::string& out) const {
    switch (kind) {
      case Kind::field: out.append(1, '.').append(name); break;
      case Kind::position: out.append(1, '.').append(std::to_string(id)); break;
      case Kind::index:
      case Kind::int_key: out.append(1, '[').append(std::to_string(id)).append(1, ']'); break;
      case Kind::string_key: out.append("[\"").append(name).append("\"]"); break;
    }
  }
  /// This step as keystr writes it.
  std::string str() const {
    std::string s;
    append_to(s);
    return s;
  }
  friend bool operator==(const KeyEntry&, const KeyEntry&) = default;
};

/// The path from the root of a tree to one of its leaves or subtrees.
using KeyPath = std::vector<KeyEntry>;

/// JAX's keystr: `.layers[2].b`; the root is the empty string.
inline std::string keystr(const KeyPath& path) {
  std::string s;
  for (const KeyEntry& k : path) k.append_to(s);
  return s;
}

namespace detail {

/// A non-owning key, cheap enough to build for every child during a traversal.
struct KeyRef {
  enum class Kind : std::uint8_t { transparent, field, position, index, string_key, int_key };
  Kind kind = Kind::transparent;
  std::string_view name{};
  std::int64_t id = 0;

  static constexpr KeyRef none() { return {}; }
  static constexpr KeyRef field(std::string_view n) { return {Kind::field, n, 0}; }
  static constexpr KeyRef position(std::size_t i) { return {Kind::position, {}, std::int64_t(i)}; }
  static constexpr KeyRef index(std::size_t i) { return {Kind::index, {}, std::int64_t(i)}; }
  static constexpr KeyRef key(std::string_view k) { return {Kind::string_key, k, 0}; }
  static constexpr KeyRef key(std::int64_t k) { return {Kind::int_key, {}, k}; }
};

/// The path so far, as a chain of stack frames; turned into a KeyPath only when needed.
struct PathLink {
  const PathLink* parent = nullptr;
  KeyRef key{};
};

inline KeyPath to_path(const PathLink* link) {
  std::size_t n = 0;
  for (const PathLink* l = link; l; l = l->parent) n += l->key.kind != KeyRef::Kind::transparent;
  KeyPath path(n);
  for (const PathLink* l = link; l; l = l->parent) {
    const KeyRef& k = l->key;
    if (k.kind == KeyRef::Kind::transparent) continue;
    path[--n] = KeyEntry{static_cast<KeyEntry::Kind>(static_cast<int>(k.kind) - 1), std::string(k.name), k.id};
  }
  return path;
}

/// keystr of a chain, or "the root" so that messages stay readable.
inline std::string where(const PathLink* link) {
  std::string s = keystr(to_path(link));
  return s.empty() ? std::string("the root") : s;
}

}  // namespace detail
}  // namespace canopy
