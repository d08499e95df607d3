// The program verifier (jax's check_jaxpr, XLA's invariant checkers): the rules every Program
// keeps, checked after each jit pass in tests and under CANOPY_VERIFY_PASSES.
#include "verify.hpp"

#include <string>
#include <vector>

#include "canopy/core/primitive.hpp"

namespace canopy::detail {
namespace {

std::string avals_text(const std::vector<Aval>& avals) {
  std::string s = "(";
  for (std::size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + to_string(avals[i]);
  return s + ")";
}

/// Who a finding is about: input i, equation i, or output i.
struct Subject {
  enum class Kind { input, equation, output } kind;
  std::size_t index;
};

class Verifier {
 public:
  Verifier(const Program& p, std::string_view where) : p_(p), where_(where), defined_(p.var_avals.size(), false) {}

  void run() {
    for (std::size_t i = 0; i < p_.in_vars.size(); ++i) define(p_.in_vars[i], {Subject::Kind::input, i});
    for (std::size_t k = 0; k < p_.eqns.size(); ++k) equation(k);
    outputs();
  }

 private:
  /// Printed only on failure: an equation's text names every variable before it.
  [[noreturn]] void fail(Subject s, const std::string& what) const {
    std::string subject;
    switch (s.kind) {
      case Subject::Kind::input: subject = concat("input ", s.index); break;
      case Subject::Kind::output: subject = concat("output ", s.index); break;
      case Subject::Kind::equation:
        subject = !p_.eqns[s.index].prim  ? concat("equation ", s.index)
                  : printable_             ? concat("equation ", s.index, " `", equation_text(p_, s.index), "`")
                                           : concat("equation ", s.index, " (", p_.eqns[s.index].prim->name, ")");
    }
    raise<ProgramError>("verify_program", subject, where_, what);
  }
  bool is_variable(int v) const { return v >= 0 && static_cast<std::size_t>(v) < p_.var_avals.size(); }

  void define(int v, Subject s) {
    if (!is_variable(v)) fail(s, concat("defines variable ", v, " of a program of ", p_.var_avals.size()));
    if (defined_[static_cast<std::size_t>(v)]) fail(s, concat("defines variable ", v, " a second time"));
    defined_[static_cast<std::size_t>(v)] = true;
  }

  /// The operand's aval, once it is known to be a defined variable or an existing constant.
  const Aval& operand(const Atom& a, Subject s) const {
    if (a.is_zero()) fail(s, "reads a zero atom, which has no aval (only an output may be one)");
    if (a.is_constant() && (a.index < 0 || static_cast<std::size_t>(a.index) >= p_.consts.size()))
      fail(s, concat("reads constant ", a.index, " of a program of ", p_.consts.size()));
    if (a.is_var() && !is_variable(a.index)) fail(s, concat("reads variable ", a.index, " of a program of ", p_.var_avals.size()));
    if (a.is_var() && !defined_[static_cast<std::size_t>(a.index)])
      fail(s, concat("reads variable ", a.index, " before any input or equation defines it"));
    return p_.aval_of(a);
  }

  void equation(std::size_t k) {
    const Eqn& e = p_.eqns[k];
    const Subject s{Subject::Kind::equation, k};
    if (!e.prim) fail(s, "has no primitive");
    // Until its operands and results are checked, the equation cannot be printed.
    printable_ = false;
    std::vector<Aval> in;
    for (const Atom& a : e.in) in.push_back(operand(a, s));
    for (int v : e.out)
      if (!is_variable(v)) fail(s, concat("defines variable ", v, " of a program of ", p_.var_avals.size()));
    printable_ = true;
    for (int v : e.out) define(v, s);
    if (e.prim->sub_programs)
      for (const auto& [name, sub] : e.prim->sub_programs(e.params_ref()))
        verify_program(*sub, concat(where_, ", in ", name, " of equation ", k, " (", e.prim->name, ")"));
    if (!e.prim->abstract_eval) return;  // nothing says what its results should be
    std::vector<Aval> want;
    try {
      want = e.prim->abstract_eval(in, e.params_ref());
    } catch (const Error& error) {
      // A collective's shape rule reads the size of its axis from the enclosing vmap or pmap,
      // which binds it when the program runs, not here: its results cannot be checked.
      if (e.prim->collective && dynamic_cast<const AxisNameError*>(&error)) return;
      fail(s, concat("has operands ", avals_text(in), " that ", e.prim->name, "'s abstract evaluation rejects: ", error.what()));
    }
    std::vector<Aval> got;
    for (int v : e.out) got.push_back(p_.var_avals[static_cast<std::size_t>(v)]);
    if (got != want)
      fail(s, concat("has results ", avals_text(got), " but ", e.prim->name, " of ", avals_text(in), " gives ", avals_text(want)));
  }

  void outputs() const {
    if (p_.outs.size() != p_.out_avals.size())
      fail({Subject::Kind::output, p_.outs.size()}, concat("is missing: ", p_.outs.size(), " outputs with ", p_.out_avals.size(), " avals"));
    for (std::size_t i = 0; i < p_.outs.size(); ++i) {
      if (p_.outs[i].is_zero()) continue;  // zeros of out_avals[i]
      const Aval& aval = operand(p_.outs[i], {Subject::Kind::output, i});
      if (!(aval == p_.out_avals[i]))
        fail({Subject::Kind::output, i}, concat("is ", to_string(aval), " but the program's out_avals say ", to_string(p_.out_avals[i])));
    }
  }

  const Program& p_;
  std::string where_;
  std::vector<bool> defined_;
  bool printable_ = true;
};

}  // namespace

void verify_program(const Program& p, std::string_view where) { Verifier(p, where).run(); }

}  // namespace canopy::detail
