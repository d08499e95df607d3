// Tree utilities of train/: simple key paths, parameter counts, the shape summary.
#include <doctest/doctest.h>

#include <map>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

namespace {
struct Layer {
  canopy::Array w, b;
};
struct Model {
  std::vector<Layer> layers;
  int config = 3;  // not an Array: not a parameter
};
}  // namespace

TEST_CASE("train tree utilities: names, counts and the shape summary") {
  using namespace canopy;
  Model m{{{zeros({784, 512}), zeros({512})}, {zeros({512, 10}), zeros({10})}}, 7};
  NamedArrays named = named_arrays(m);
  REQUIRE(named.size() == 4);
  CHECK(named[0].name == "layers/0/w");
  CHECK(named[3].name == "layers/1/b");
  CHECK(parameter_count(m) == 784 * 512 + 512 + 5120 + 10);
  CHECK(parameter_bytes(m) == 4 * parameter_count(m));
  std::string s = shape_summary(m);
  CHECK(s.find("layers/0/w  f32[784,512]\n") != std::string::npos);
  CHECK(s.find("total: 407050 parameters (1628200 bytes)") != std::string::npos);

  std::map<std::string, Array> dict{{"lr", scalar(1.0f)}};
  CHECK(named_arrays(dict)[0].name == "lr");

  Model r = replace_arrays(m, {ones({784, 512}), ones({512}), ones({512, 10}), ones({10})});
  CHECK(r.layers[1].b.to_vector<float>()[0] == 1.0f);
  CHECK(r.config == 7);
  CHECK_THROWS_AS(replace_arrays(m, {ones({2})}), TreeError);
}
