// TreeDef: the structure of a tree without its leaves. It records only what the C++ type
// leaves open, so it is cheap to build, compare and hash (half of every jit cache key).
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "canopy/pytree/detail/aux.hpp"
#include "canopy/pytree/detail/type_name.hpp"
#include "canopy/pytree/detail/walk.hpp"
#include "canopy/pytree/key_path.hpp"

namespace canopy {
namespace detail {

/// What a TreeDef knows about its type, reached through one static table per (type, is_leaf option).
struct TypeOps {
  const std::string& (*name)();
  std::uint64_t (*hash)();
  void (*render)(AuxReader&, std::string&);
  void (*paths)(AuxReader&, std::vector<KeyPath>&);
};

/// Renders a structure the way JAX prints a PyTreeDef: `*` for leaves, `[...]`, `(...)`, `{"k": ...}`,
/// `Name(...)` for structs, `None` for an empty optional.
struct Renderer {
  std::string& out;
  std::vector<int> counts{};
  void leaf(const PathLink*) { out += '*'; }
  template <class Impl>
  void open() {
    if constexpr (requires { Impl::label(); }) out += Impl::label();
    out += Impl::open;
    counts.push_back(0);
  }
  void child(const KeyRef& k) {
    if (counts.back()++) out += ", ";
    if (k.kind == KeyRef::Kind::field) out.append(k.name).append("=");
    else if (k.kind == KeyRef::Kind::string_key) out.append("\"").append(k.name).append("\": ");
    else if (k.kind == KeyRef::Kind::int_key) out.append(std::to_string(k.id)).append(": ");
  }
  template <class Impl>
  void close() {
    if (counts.back() == 0 && Impl::open.empty()) out += "None";
    counts.pop_back();
    out += Impl::close;
  }
};

struct PathCollector {
  std::vector<KeyPath>& paths;
  void leaf(const PathLink* link) { paths.push_back(to_path(link)); }
  template <class Impl>
  void open() {}
  void child(const KeyRef&) {}
  template <class Impl>
  void close() {}
};

template <class T, class P>
void render_tree(AuxReader& r, std::string& out) {
  Renderer vis{out};
  structure_walk<T, P>(r, vis, nullptr);
}
template <class T, class P>
void collect_paths(AuxReader& r, std::vector<KeyPath>& paths) {
  PathCollector vis{paths};
  structure_walk<T, P>(r, vis, nullptr);
}
template <class T, class P>
std::uint64_t option_type_hash() {
  return type_hash<std::pair<T, P>>();
}

template <class T, class P>
inline constexpr TypeOps type_ops{&type_name<T>, &option_type_hash<T, P>, &render_tree<T, P>, &collect_paths<T, P>};

}  // namespace detail

/// The structure of a pytree: its type, what the type leaves open, and its number of leaves.
class TreeDef {
 public:
  /// Describes nothing; equal only to other default TreeDefs.
  TreeDef() = default;

  /// Number of leaves a tree of this structure has.
  std::size_t num_leaves() const noexcept { return num_leaves_; }
  /// A hash stable across runs and processes (FNV-1a over the mangled type name and aux words).
  std::uint64_t hash() const noexcept { return hash_; }
  /// The demangled C++ type this structure belongs to.
  const std::string& type_name() const {
    static const std::string none = "<none>";
    return ops_ ? ops_->name() : none;
  }
  /// JAX-style text with field names where the node has them: `PyTreeDef(Layer(w=*, b=[*, *]))`.
  std::string to_string() const {
    std::string s = "PyTreeDef(";
    if (ops_) {
      detail::AuxReader r = reader();
      ops_->render(r, s);
    }
    return s + ")";
  }
  /// The key path of every leaf, in leaf order.
  std::vector<KeyPath> leaf_paths() const {
    std::vector<KeyPath> paths;
    if (ops_) {
      detail::AuxReader r = reader();
      ops_->paths(r, paths);
    }
    return paths;
  }
  /// Whether this structure was taken from a T (with the same is_leaf option P).
  template <class T, class P = NoLeafIf>
  bool describes() const noexcept {
    return ops_ == &detail::type_ops<T, P> || (ops_ && ops_->hash() == detail::type_ops<T, P>.hash() &&
                                               ops_->name() == detail::type_ops<T, P>.name());
  }
  /// The recorded words (lengths, keys, optional engagement, variant indices) in pre-order.
  std::span<const std::uint64_t> aux() const noexcept { return aux_; }

  friend bool operator==(const TreeDef& a, const TreeDef& b) {
    if (a.hash_ != b.hash_ || a.num_leaves_ != b.num_leaves_ || a.aux_ != b.aux_) return false;
    return a.ops_ == b.ops_ || (a.ops_ && b.ops_ && a.ops_->name() == b.ops_->name());
  }
  friend std::ostream& operator<<(std::ostream& os, const TreeDef& d) { return os << d.to_string(); }

  /// Internal: built by tree_flatten / tree_structure.
  TreeDef(const detail::TypeOps* ops, std::vector<std::uint64_t> aux, std::size_t num_leaves)
      : ops_(ops), aux_(std::move(aux)), num_leaves_(num_leaves) {
    std::uint64_t h = detail::mix(ops_->hash(), num_leaves_);
    for (std::uint64_t w : aux_) h = detail::mix(h, w);
    hash_ = h;
  }
  detail::AuxReader reader() const { return {aux_.data(), aux_.data() + aux_.size()}; }

 private:
  const detail::TypeOps* ops_ = nullptr;
  std::vector<std::uint64_t> aux_;
  std::size_t num_leaves_ = 0;
  std::uint64_t hash_ = 0;
};

}  // namespace canopy

template <>
struct std::hash<canopy::TreeDef> {
  std::size_t operator()(const canopy::TreeDef& d) const noexcept { return std::size_t(d.hash()); }
};
