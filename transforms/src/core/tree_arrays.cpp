// The out-of-line half of transforms/tree_arrays.hpp: checking user-supplied tangents and
// cotangents against the values they belong to, with key paths in the messages.
#include "canopy/transforms/tree_arrays.hpp"

namespace canopy::detail {

std::vector<Aval> avals_of(const Arrays& xs) {
  std::vector<Aval> out;
  for (const Array& x : xs) out.push_back(x.aval());
  return out;
}

void check_like(const char* api, const char* what, const Arrays& given, const std::vector<Aval>& expected,
                const std::function<std::vector<std::string>()>& names) {
  for (std::size_t i = 0; i < given.size() && i < expected.size(); ++i) {
    const Aval& want = expected[i];
    if (!(given[i].shape() == want.shape))
      raise<ShapeError>(api, what, names().at(i),
                        concat("has shape ", to_string(given[i].aval()), " but must match ", to_string(want)));
    if (given[i].dtype() != want.dtype)
      raise<TypeError>(api, what, names().at(i),
                       concat("has dtype ", to_string(given[i].aval()), " but must match ", to_string(want)),
                       "tangents and cotangents have the dtype of the value they belong to");
  }
}

}  // namespace canopy::detail
