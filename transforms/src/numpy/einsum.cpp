// jnp.einsum for one or two operands, lowered to reductions, one dot_general and a transpose.
// Subscripts are numpy's: letters per axis, an optional "..." for broadcast leading axes, and
// an optional "->" output (implicit: the ellipsis axes, then the letters used once, sorted).
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>

#include "../primitives/common.hpp"

namespace canopy {
namespace {

constexpr std::string_view kApi = "einsum";

// One operand's subscript with its "..." spelled out as digits '0'..'9' (right-aligned, so
// ellipsis axes broadcast as numpy's leading axes do).
std::string expand_term(std::string_view term, std::size_t rank, std::size_t ellipsis_rank, std::size_t arg) {
  const auto dots = term.find("...");
  std::string letters(term);
  if (dots != std::string_view::npos) letters.erase(dots, 3);
  for (char c : letters)
    if (!std::isalpha(static_cast<unsigned char>(c)))
      detail::raise<ShapeError>(kApi, "subscripts", std::string(term), detail::concat("has '", c, "', which is not a letter"),
                                "use letters, one per axis, and at most one \"...\"");
  if (dots == std::string_view::npos) {
    if (letters.size() != rank)
      detail::raise<ShapeError>(kApi, "subscripts", std::string(term),
                                detail::concat("name ", letters.size(), " axes but operand ", arg, " has rank ", rank));
    return letters;
  }
  if (letters.size() > rank)
    detail::raise<ShapeError>(kApi, "subscripts", std::string(term),
                              detail::concat("name ", letters.size(), " axes but operand ", arg, " has rank ", rank));
  std::string ell;
  for (std::size_t i = ellipsis_rank - (rank - letters.size()); i < ellipsis_rank; ++i)
    ell += static_cast<char>('0' + (ellipsis_rank - 1 - i));
  return std::string(term.substr(0, dots)) + ell + std::string(term.substr(dots + 3));
}

// The axes of `term` whose letters are not in `keep`, summed out.
Array sum_out(const Array& x, std::string& term, const std::string& keep) {
  std::vector<int> axes;
  std::string kept;
  for (std::size_t i = 0; i < term.size(); ++i) {
    if (keep.find(term[i]) == std::string::npos) axes.push_back(static_cast<int>(i));
    else kept += term[i];
  }
  term = kept;
  return axes.empty() ? x : sum(x, axes);
}

// x (axes named by `term`) permuted into the order of `out`.
Array to_order(const Array& x, const std::string& term, const std::string& out) {
  std::vector<int> perm;
  for (char c : out) perm.push_back(static_cast<int>(term.find(c)));
  return transpose(x, perm);
}

// The subscripts without spaces, split into the operands' terms and the output after "->".
struct Subscripts {
  std::vector<std::string> terms;     // one per operand, as written
  std::optional<std::string> output;  // after "->"; none: implicit
};

Subscripts parse_subscripts(std::string_view subscripts) {
  std::string text;
  for (char c : subscripts)
    if (c != ' ') text += c;
  Subscripts spec;
  const auto arrow = text.find("->");
  const std::string inputs = text.substr(0, arrow);
  for (std::size_t start = 0;;) {
    const auto comma = inputs.find(',', start);
    spec.terms.push_back(inputs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) spec.output = text.substr(arrow + 2);
  return spec;
}

// How many leading axes "..." stands for: the most any operand's ellipsis covers.
std::size_t ellipsis_rank_of(const Subscripts& spec, const std::vector<Array>& operands, std::string_view subscripts) {
  std::size_t rank = 0;
  for (std::size_t i = 0; i < spec.terms.size(); ++i)
    if (spec.terms[i].find("...") != std::string::npos) {
      const std::size_t named = spec.terms[i].size() - 3;
      if (operands[i].ndim() >= named) rank = std::max(rank, operands[i].ndim() - named);
    }
  // Ellipsis axes are spelled as the digits '0'..'9'.
  if (rank > 10) detail::raise<ShapeError>(kApi, "subscripts", std::string(subscripts), "cover more than 10 axes with \"...\"");
  return rank;
}

// The ellipsis axes' names, outermost first ('0' is the last axis covered).
std::string ellipsis_names(std::size_t ellipsis_rank) {
  std::string names;
  for (std::size_t i = ellipsis_rank; i-- > 0;) names += static_cast<char>('0' + i);
  return names;
}

// Every operand's axis names (ellipsis spelled out) and each name's size, broadcast over the
// operands (a size-1 axis meets any size).
struct AxisNames {
  std::vector<std::string> names;
  std::map<char, std::int64_t> size;
};

AxisNames name_axes(const Subscripts& spec, const std::vector<Array>& operands, std::size_t ellipsis_rank,
               std::string_view subscripts) {
  AxisNames axes;
  for (std::size_t i = 0; i < spec.terms.size(); ++i) {
    axes.names.push_back(expand_term(spec.terms[i], operands[i].ndim(), ellipsis_rank, i));
    const std::string& names = axes.names[i];
    for (std::size_t d = 0; d < names.size(); ++d) {
      const char c = names[d];
      if (names.find(c) != d)
        detail::raise<ShapeError>(kApi, "subscripts", spec.terms[i], detail::concat("repeat '", c, "' within operand ", i),
                                  "diagonals (\"ii->i\") are not supported; use jnp.diagonal-style indexing");
      const std::int64_t n = operands[i].shape()[d];
      auto [it, fresh] = axes.size.emplace(c, n);
      if (!fresh && it->second != n && it->second != 1 && n != 1)
        detail::raise<ShapeError>(kApi, "operands", std::string(subscripts),
                                  detail::concat("give axis '", c, "' sizes ", it->second, " and ", n, " (",
                                                 to_string(operands[0].aval()), operands.size() > 1 ? ", " : "",
                                                 operands.size() > 1 ? to_string(operands[1].aval()) : "", ")"));
      it->second = std::max(it->second, n);
    }
  }
  return axes;
}

// numpy's implicit output: the ellipsis axes, then the letters used exactly once, sorted.
std::string implicit_output(const AxisNames& axes, std::size_t ellipsis_rank) {
  std::string out = ellipsis_names(ellipsis_rank);
  for (const auto& [c, n] : axes.size) {  // std::map iterates in sorted order
    std::size_t uses = 0;
    for (const std::string& t : axes.names) uses += static_cast<std::size_t>(std::count(t.begin(), t.end(), c));
    if (std::isalpha(static_cast<unsigned char>(c)) && uses == 1) out += c;
  }
  return out;
}

// The output after "->" with its "..." spelled out; each name must name an input axis, once.
std::string explicit_output(const std::string& given, const AxisNames& axes, std::size_t ellipsis_rank) {
  const auto dots = given.find("...");
  const std::string out =
      dots == std::string::npos ? given : given.substr(0, dots) + ellipsis_names(ellipsis_rank) + given.substr(dots + 3);
  for (std::size_t d = 0; d < out.size(); ++d)
    if (!axes.size.count(out[d]) || out.find(out[d]) != d)
      detail::raise<ShapeError>(kApi, "output subscripts", given,
                                detail::concat("'", out[d], "' ", axes.size.count(out[d]) ? "repeats" : "names no input axis"));
  return out;
}

// Each operand with the axes no one else needs summed out first (narrowing its names), and its
// size-1 axes broadcast to their partner's size, so the contraction sees equal sizes.
std::vector<Array> reduce_operands(const std::vector<Array>& operands, AxisNames& axes, const std::string& out) {
  std::vector<Array> xs;
  for (std::size_t i = 0; i < axes.names.size(); ++i) {
    std::string others = out;
    for (std::size_t j = 0; j < axes.names.size(); ++j)
      if (j != i) others += axes.names[j];
    Array x = sum_out(operands[i], axes.names[i], others);
    Shape target;
    for (char c : axes.names[i]) target.push_back(axes.size[c]);
    xs.push_back(broadcast_to(x, target));
  }
  return xs;
}

// The two operands as one dot_general: shared axes kept in the output are batch axes, the other
// shared ones are contracted; the result comes in the order `out` names.
Array contract(const std::vector<Array>& xs, const std::vector<std::string>& names, const std::string& out,
               const PrecisionConfig& precision) {
  const DType dtype = result_type({xs[0], xs[1]});
  DotDimensionNumbers dn;
  std::string produced;  // the result's axes: batch, then lhs free, then rhs free
  for (std::size_t d = 0; d < names[0].size(); ++d) {
    const char c = names[0][d];
    const auto other = names[1].find(c);
    if (other == std::string::npos) continue;
    const bool kept = out.find(c) != std::string::npos;
    (kept ? dn.lhs_batch : dn.lhs_contracting).push_back(static_cast<int>(d));
    (kept ? dn.rhs_batch : dn.rhs_contracting).push_back(static_cast<int>(other));
    if (kept) produced += c;
  }
  for (char c : names[0])
    if (names[1].find(c) == std::string::npos) produced += c;
  for (char c : names[1])
    if (names[0].find(c) == std::string::npos) produced += c;
  const Array r = dot_general(xs[0].astype(dtype), xs[1].astype(dtype), dn, precision);
  return to_order(r, produced, out);
}

}  // namespace

Array einsum(std::string_view subscripts, const std::vector<Array>& operands, const PrecisionConfig& precision) {
  const Subscripts spec = parse_subscripts(subscripts);
  if (operands.empty() || operands.size() > 2 || spec.terms.size() != operands.size())
    detail::raise<ShapeError>(kApi, "subscripts", std::string(subscripts),
                              detail::concat("name ", spec.terms.size(), " operands but ", operands.size(), " were given"),
                              "canopy's einsum takes one or two operands; chain calls for more");
  const std::size_t ellipsis_rank = ellipsis_rank_of(spec, operands, subscripts);
  AxisNames axes = name_axes(spec, operands, ellipsis_rank, subscripts);
  const std::string out =
      spec.output ? explicit_output(*spec.output, axes, ellipsis_rank) : implicit_output(axes, ellipsis_rank);
  const std::vector<Array> xs = reduce_operands(operands, axes, out);
  if (xs.size() == 1) return to_order(xs[0], axes.names[0], out);
  return contract(xs, axes.names, out, precision);
}

Array einsum(std::string_view subscripts, const Array& a) { return einsum(subscripts, std::vector<Array>{a}); }
Array einsum(std::string_view subscripts, const Array& a, const Array& b, const PrecisionConfig& precision) {
  return einsum(subscripts, std::vector<Array>{a, b}, precision);
}

}  // namespace canopy
