// The core's one IR: a Program (JAX's jaxpr) of typed input variables, constants, equations of
// primitive + params + operands, and outputs. The staging trace records functions into it;
// linearize/vjp keep their linear map in one, jit compiles one, make_jaxpr prints one.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "canopy/array.hpp"

namespace canopy {

struct PrimitiveInfo;
struct ParamsRef;

/// An operand or result of an equation: a variable of the program, a constant, or a zero.
struct Atom {
  enum class Kind : std::uint8_t { var, constant, zero };
  Kind kind = Kind::zero;
  int index = -1;  ///< the variable (kind var) or the constant (kind constant)
  static Atom variable(int v) { return {Kind::var, v}; }
  static Atom constant(int c) { return {Kind::constant, c}; }
  static Atom zeros() { return {}; }
  bool is_var() const { return kind == Kind::var; }
  bool is_constant() const { return kind == Kind::constant; }
  bool is_zero() const { return kind == Kind::zero; }
  friend bool operator==(const Atom&, const Atom&) = default;
};

/// One application of a primitive: outs = prim[params](in...).
struct Eqn {
  const PrimitiveInfo* prim = nullptr;
  std::shared_ptr<const void> params;  ///< an owned copy of the primitive's Params
  std::vector<Atom> in;
  std::vector<int> out;  ///< output variables
  ParamsRef params_ref() const;
};

/// A function as a list of equations in dependency order (SSA: each variable defined once).
struct Program {
  std::vector<Aval> var_avals;  ///< the aval of every variable, by index
  std::vector<int> in_vars;     ///< the inputs, in order
  Arrays consts;                ///< the constants atoms refer to (concrete, or tracers of enclosing traces)
  std::vector<Eqn> eqns;
  std::vector<Atom> outs;       ///< the results (a zero atom stands for zeros of out_avals[i])
  std::vector<Aval> out_avals;  ///< the aval of every result

  /// A fresh variable of aval `a`.
  int new_var(const Aval& a) {
    var_avals.push_back(a);
    return static_cast<int>(var_avals.size()) - 1;
  }
  /// The aval of an atom (a zero atom has none: pass the result's aval instead).
  const Aval& aval_of(const Atom& a) const { return a.is_var() ? var_avals[a.index] : consts[a.index].aval(); }
  /// The avals of the inputs.
  std::vector<Aval> in_avals() const;
  /// Calls f on every operand atom of every equation and on every output atom.
  template <class F>
  void for_each_atom(F&& f) {
    for (Eqn& e : eqns)
      for (Atom& a : e.in) f(a);
    for (Atom& a : outs) f(a);
  }
  /// Removes the constants no atom refers to, renumbering the others.
  void drop_unused_consts();
};

/// jaxpr text: `{ lambda a:f32[3]; b:f32[2,3]. let c:f32[2,3] = mul b a in (c) }`, one equation a
/// line, sub-programs of call and control-flow primitives indented inside their equation.
std::string to_string(const Program& p);
std::ostream& operator<<(std::ostream& os, const Program& p);

namespace detail {

/// Runs `p` on `inputs` by binding each equation on the current trace stack, so enclosing
/// transformations see every primitive (this is how a program is differentiated or batched).
Arrays eval_program(const Program& p, std::span<const Array> inputs);

/// A program split by what is known now (JAX's partial_eval_jaxpr): `known` computes the known
/// outputs from the known inputs, plus residuals; `unknown` computes the requested outputs
/// from the residuals (first) and the unknown inputs.
struct PartialEval {
  Program known, unknown;
  std::size_t num_residuals = 0;
};
/// Splits `p` given which inputs are known; every output not in `unknown_outs` must be known.
PartialEval partial_eval(const Program& p, const std::vector<bool>& known_inputs, const std::vector<int>& unknown_outs);

/// The jvp of `p` as a program: (inputs, their tangents) -> (outputs, their tangents), zero
/// tangents instantiated.
Program jvp_program(const Program& p);
/// partial_eval of a jvp_program with its primal inputs known and its tangent outputs asked for.
PartialEval linearize_split(const Program& jvp);

/// `p` with the inputs flagged in `which` replaced by constants holding `values` (in order).
Program bind_inputs(const Program& p, const std::vector<bool>& which, const Arrays& values);

/// `p` with its inputs reordered: new input i is old input order[i].
Program permute_inputs(const Program& p, const std::vector<int>& order);

/// `p` with its equations printed at `indent` spaces (for sub-programs inside equations).
std::string program_text(const Program& p, int indent);

}  // namespace detail
}  // namespace canopy
