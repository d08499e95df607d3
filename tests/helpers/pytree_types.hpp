// The structs the pytree suites share: one of every node kind, nested.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#include <boost/hana/define_struct.hpp>
#include <canopy/pytree.hpp>

namespace canopy_test {

enum class Color { red, green };

struct Bias {
  float b;
  double scale;
  bool operator==(const Bias&) const = default;
};
struct Layer {
  std::vector<float> w;
  Bias bias;
};
/// A struct holding a map of vectors of optional structs.
struct Deep {
  std::map<std::string, std::vector<std::optional<Bias>>> groups;
  int step;
};

/// A model of plain aggregates: no macro and no registration, named in key paths.
struct MlpLayer {
  float w;
  std::vector<float> b;
};
struct Mlp {
  std::vector<MlpLayer> layers;
  std::optional<MlpLayer> head;
};

template <class A>
struct Params {
  A w;
  std::vector<A> b;
};

struct Net {
  BOOST_HANA_DEFINE_STRUCT(Net, (std::vector<Layer>, layers), (std::map<std::string, float>, hyper));
};

/// A class with private members, reachable only through accessors and a constructor.
class Linear {
 public:
  Linear(float weight, std::vector<float> bias) : weight_(weight), bias_(std::move(bias)) {}
  float weight() const { return weight_; }
  const std::vector<float>& bias() const { return bias_; }

 private:
  float weight_;
  std::vector<float> bias_;
};

/// A class template registered with names, so tree_map can change its leaf type.
template <class T>
class Pair {
 public:
  Pair(T a, T b) : a_(a), b_(b) {}
  const T& a() const { return a_; }
  const T& b() const { return b_; }

 private:
  T a_, b_;
};

/// A user-declared leaf type.
struct Handle {
  int id;
  bool operator==(const Handle&) const = default;
};

}  // namespace canopy_test

template <>
struct canopy::is_leaf<canopy_test::Handle> : std::true_type {};

template <>
struct canopy::pytree_node<canopy_test::Linear> {
  static auto children(const canopy_test::Linear& l) { return std::make_tuple(l.weight(), l.bias()); }
  static canopy_test::Linear from_children(std::tuple<float, std::vector<float>> c) {
    return {std::get<0>(c), std::move(std::get<1>(c))};
  }
};

template <class T>
struct canopy::pytree_node<canopy_test::Pair<T>> {
  static constexpr std::array<std::string_view, 2> names = {"a", "b"};
  static auto children(const canopy_test::Pair<T>& p) { return std::tie(p.a(), p.b()); }
  template <class U, class V>
  static auto from_children(std::tuple<U, V> c) {
    return canopy_test::Pair<U>(std::get<0>(c), std::get<1>(c));
  }
};
