// The type-erased cores of jvp and vjp: functions of flat lists of Arrays. The pytree layer in
// <canopy/transforms.hpp> flattens the caller's structs into these lists and back.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "canopy/array.hpp"

namespace canopy::detail {

/// A function of flat Arrays: what the user's lambda becomes once its pytrees are flattened.
using FlatFn = std::function<Arrays(const Arrays&)>;

/// Forward mode: f's outputs and their tangents. An invalid tangent (in or out) is a zero.
std::pair<Arrays, Arrays> jvp_flat(const FlatFn& f, const Arrays& primals, const Arrays& tangents);

}  // namespace canopy::detail
namespace canopy {
struct Program;
}
namespace canopy::detail {

/// The transposed linear map of vjp: cotangents of the outputs in, cotangents of the inputs out.
/// Can be called many times; its operations are traced again when called inside a transform.
class Pullback {
 public:
  /// Where a concrete primal input of f was: the zero gradient of an input that no cotangent
  /// reaches goes there, as jax instantiates a symbolic zero against the input itself.
  struct InputPlacement {
    Device device;
    bool committed = false;
    bool known = false;  ///< false for a traced input: its zeros go where the cotangents are
  };

  Pullback() = default;
  explicit Pullback(std::shared_ptr<const Program> program, std::vector<InputPlacement> inputs = {})
      : program_(std::move(program)), inputs_(std::move(inputs)) {}
  /// One cotangent per output of f (an invalid Array is a zero); returns one per input, zeros
  /// (valid Arrays) where an input did not influence the outputs.
  Arrays operator()(const Arrays& cotangents) const;

 private:
  std::shared_ptr<const Program> program_;
  std::vector<InputPlacement> inputs_;
};

/// The linear map of linearize: tangents of the inputs in, tangents of the outputs out,
/// evaluated by replaying the recorded linear equations (f's primal is not recomputed).
class Pushforward {
 public:
  Pushforward() = default;
  explicit Pushforward(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
  Arrays operator()(const Arrays& tangents) const;

 private:
  std::shared_ptr<const Program> program_;
};

/// f's outputs and its linearization at `primals`.
std::pair<Arrays, Pushforward> linearize_flat(const FlatFn& f, const Arrays& primals);

/// Reverse mode: f's outputs (concrete, or tracers of enclosing transforms) and the pullback.
std::pair<Arrays, Pullback> vjp_flat(const FlatFn& f, const Arrays& primals);

}  // namespace canopy::detail
