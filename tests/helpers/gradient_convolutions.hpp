// The convolutions a gradient program runs: grad of a loss through one convolution, recorded by
// make_jaxpr, each as its kernel gets it (ConvGeometry), for the tests of the cuDNN mapping.
#pragma once

#include <cstdint>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/nn_geometry.hpp>

#include "../../transforms/src/primitives/conv/conv_geometry.hpp"

namespace canopy::test {

/// The convolutions of the program `grad` records for a loss through one convolution, as the
/// kernels get them.
inline std::vector<kernels::ConvGeometry> gradient_convolutions(const Array& x, const Array& w, const std::vector<std::int64_t>& strides,
                                                const Padding& padding, const ConvDimensionNumbers& dn, std::int64_t groups) {
  auto loss = [&](const Array& a, const Array& b) {
    const Array y = conv_general_dilated(a, b, strides, padding, {}, {}, dn, groups);
    return sum(y * y);
  };
  const Program p = make_jaxpr(grad(loss, argnums<0, 1>))(x, w);
  std::vector<kernels::ConvGeometry> out;
  for (const Eqn& e : p.eqns)
    if (e.prim->name == "conv_general_dilated")
      out.push_back(detail::conv_geometry(e.params_ref(), p.aval_of(e.in[0]).shape, p.aval_of(e.in[1]).shape,
                                          p.var_avals[static_cast<std::size_t>(e.out[0])].shape));
  return out;
}

}  // namespace canopy::test
