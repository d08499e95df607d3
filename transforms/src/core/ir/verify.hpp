// The program verifier (jax's check_jaxpr, XLA's invariant checkers) and the error it raises.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "canopy/core/ir.hpp"
#include "canopy/error.hpp"

namespace canopy {

/// A Program that breaks the IR's rules (a variable used before its definition or defined twice,
/// an equation whose result avals are not its primitive's abstract evaluation, an undefined
/// output): a bug of the pass that made it, not of the user's function. A TypeError, as jax's
/// JaxprTypeError is.
class ProgramError : public TypeError {
 public:
  using TypeError::TypeError;
};

namespace detail {

/// Checks that every variable is defined once (an input or one equation's result) before any
/// use, every constant operand exists, every equation's result avals are what its primitive's
/// abstract_eval gives for its operands' avals and params (an equation a pass made included),
/// every output is defined with its out_aval, and the sub-programs of call and control-flow
/// equations hold the same, recursively. Raises ProgramError naming `where` (the pass that made
/// p), the equation and the avals.
void verify_program(const Program& p, std::string_view where);

/// Equation k of `p` as program_text names it (`c:f32[3] = mul b a`), its sub-programs left out.
std::string equation_text(const Program& p, std::size_t k);

}  // namespace detail
}  // namespace canopy
