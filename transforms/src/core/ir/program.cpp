// Program: printing as a jaxpr, and evaluation by binding each equation on the trace stack.
#include <cmath>
#include <ostream>
#include <sstream>

#include "../autodiff/jvp_trace.hpp"
#include "canopy/core/ir.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"
#include "verify.hpp"

namespace canopy {

ParamsRef Eqn::params_ref() const { return {params.get(), prim->params_type}; }

std::vector<Aval> Program::in_avals() const {
  std::vector<Aval> out;
  out.reserve(in_vars.size());
  for (int v : in_vars) out.push_back(var_avals[v]);
  return out;
}

void Program::drop_unused_consts() {
  std::vector<int> remap(consts.size(), -1);
  for_each_atom([&](Atom& a) {
    if (a.is_constant()) remap[a.index] = 0;
  });
  Arrays kept;
  for (std::size_t c = 0; c < consts.size(); ++c)
    if (remap[c] == 0) {
      remap[c] = static_cast<int>(kept.size());
      kept.push_back(std::move(consts[c]));
    }
  consts = std::move(kept);
  for_each_atom([&](Atom& a) {
    if (a.is_constant()) a.index = remap[a.index];
  });
}

namespace detail {
namespace {

/// jaxpr's variable names: a..z, then ba, bb, ... (a leading `a` would read as a zero digit).
std::string var_name(int n) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + n % 26));
    n /= 26;
  } while (n > 0);
  return s;
}

/// A scalar constant printed inline as jaxpr prints literals: `2.0:f32[]`.
bool is_literal(const Array& c) { return !c.is_tracer() && c.ndim() == 0; }

std::string literal_text(const Array& c) {
  std::ostringstream os;
  if (c.dtype() == DType::bool_) os << (c.item<bool>() ? "True" : "False");
  else if (is_unsigned(c.dtype())) os << c.item<std::uint64_t>();  // exact up to 2^64 - 1
  else if (is_integer(c.dtype())) os << c.item<std::int64_t>();
  else {
    const double v = c.item<double>();
    if (std::isnan(v)) os << "nan";
    else if (std::isinf(v)) os << (v > 0 ? "inf" : "-inf");
    else {
      os.precision(8);
      os << v;
      if (os.str().find_first_of(".en") == std::string::npos) os << ".0";
    }
  }
  os << ':' << to_string(c.aval());
  return os.str();
}

struct Printer {
  const Program& p;
  std::vector<std::string> var_names, const_names;
  int next = 0;

  explicit Printer(const Program& prog) : p(prog), var_names(prog.var_avals.size()), const_names(prog.consts.size()) {}

  std::string atom(const Atom& a, const Aval* zero_aval = nullptr) const {
    if (a.is_var()) return var_names[a.index].empty() ? std::string("?").append(var_name(a.index)) : var_names[a.index];
    if (a.is_constant()) return is_literal(p.consts[a.index]) ? literal_text(p.consts[a.index]) : const_names[a.index];
    return zero_aval ? "zeros:" + to_string(*zero_aval) : "0";
  }
  std::string bind_var(int v) {
    var_names[v] = var_name(next++);
    return var_names[v] + ":" + to_string(p.var_avals[v]);
  }

  /// `{ lambda consts; inputs. let`, naming the constants and inputs.
  std::string head() {
    std::ostringstream os;
    os << "{ lambda ";
    bool first = true;
    for (std::size_t c = 0; c < p.consts.size(); ++c) {
      if (is_literal(p.consts[c])) continue;
      const_names[c] = var_name(next++);
      os << (first ? "" : " ") << const_names[c] << ':' << to_string(p.consts[c].aval());
      first = false;
    }
    os << ';';
    for (int v : p.in_vars) os << ' ' << bind_var(v);
    os << ". let";
    return os.str();
  }

  /// `c:f32[3] = mul a b`, naming its results; sub-programs at `indent` (none when negative).
  std::string equation(const Eqn& e, int indent) {
    std::ostringstream os;
    for (std::size_t i = 0; i < e.out.size(); ++i) os << (i ? " " : "") << bind_var(e.out[i]);
    os << " = " << e.prim->name;
    std::string params = e.prim->params_to_string ? e.prim->params_to_string(e.params_ref()) : "";
    if (e.prim->sub_programs && indent >= 0)
      for (const auto& [name, sub] : e.prim->sub_programs(e.params_ref())) {
        if (!params.empty()) params += ' ';
        params += name + "=" + program_text(*sub, indent + 6);
      }
    if (!params.empty()) os << '[' << params << ']';
    for (const Atom& a : e.in) os << ' ' << atom(a);
    return os.str();
  }

  std::string text(int indent) {
    std::ostringstream os;
    std::string pad(static_cast<std::size_t>(indent), ' ');
    os << head();
    for (const Eqn& e : p.eqns) os << '\n' << pad << "    " << equation(e, indent);
    os << '\n' << pad << "  in (";
    for (std::size_t i = 0; i < p.outs.size(); ++i) os << (i ? ", " : "") << atom(p.outs[i], &p.out_avals[i]);
    if (p.outs.size() == 1) os << ',';
    os << ") }";
    return os.str();
  }
};

}  // namespace

std::string program_text(const Program& p, int indent) { return Printer(p).text(indent); }

std::string equation_text(const Program& p, std::size_t k) {
  Printer printer(p);
  printer.head();
  for (std::size_t j = 0; j < k; ++j) printer.equation(p.eqns[j], -1);
  return printer.equation(p.eqns[k], -1);
}

Arrays eval_program(const Program& p, std::span<const Array> inputs) {
  if (inputs.size() != p.in_vars.size())
    raise<TypeError>("eval_program", "inputs", "", concat("are ", inputs.size(), " arrays but the program takes ", p.in_vars.size()));
  std::vector<Array> env(p.var_avals.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) env[p.in_vars[i]] = inputs[i];
  auto value = [&](const Atom& a, const Aval* aval) -> Array {
    if (a.is_var()) return env[a.index].valid() ? env[a.index] : zeros_for(p.var_avals[a.index]);
    if (a.is_constant()) return p.consts[a.index];
    return zeros_for(*aval);
  };
  Arrays in;
  for (const Eqn& e : p.eqns) {
    in.clear();
    for (const Atom& a : e.in) in.push_back(value(a, nullptr));
    Arrays out = detail::bind(*e.prim, in, e.params_ref());
    for (std::size_t i = 0; i < e.out.size(); ++i) env[e.out[i]] = std::move(out[i]);
  }
  Arrays res;
  res.reserve(p.outs.size());
  for (std::size_t i = 0; i < p.outs.size(); ++i) res.push_back(value(p.outs[i], &p.out_avals[i]));
  return res;
}

}  // namespace detail

std::string to_string(const Program& p) { return detail::program_text(p, 0); }
std::ostream& operator<<(std::ostream& os, const Program& p) { return os << to_string(p); }

}  // namespace canopy
