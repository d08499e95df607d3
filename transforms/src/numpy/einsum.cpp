// jnp.einsum for one or two operands, lowered to reductions, one dot_general and a transpose.
// Subscripts are numpy's: letters per axis, an optional "..." for broadcast leading axes, and
// an optional "->" output (implicit: the ellipsis axes, then the letters used once, sorted).
#include <algorithm>
#include <cctype>
#include <map>
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

}  // namespace

Array einsum(std::string_view subscripts, const std::vector<Array>& operands, const PrecisionConfig& precision) {
  std::string spec;
  for (char c : subscripts)
    if (c != ' ') spec += c;
  const auto arrow = spec.find("->");
  const std::string inputs = spec.substr(0, arrow);
  std::vector<std::string> terms;
  for (std::size_t start = 0;;) {
    const auto comma = inputs.find(',', start);
    terms.push_back(inputs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (operands.empty() || operands.size() > 2 || terms.size() != operands.size())
    detail::raise<ShapeError>(kApi, "subscripts", std::string(subscripts),
                              detail::concat("name ", terms.size(), " operands but ", operands.size(), " were given"),
                              "canopy's einsum takes one or two operands; chain calls for more");
  std::size_t ellipsis_rank = 0;
  for (std::size_t i = 0; i < terms.size(); ++i)
    if (terms[i].find("...") != std::string::npos) {
      const std::size_t named = terms[i].size() - 3;
      if (operands[i].ndim() >= named) ellipsis_rank = std::max(ellipsis_rank, operands[i].ndim() - named);
    }
  if (ellipsis_rank > 10) detail::raise<ShapeError>(kApi, "subscripts", std::string(subscripts), "cover more than 10 axes with \"...\"");
  std::vector<std::string> names;
  std::map<char, std::int64_t> size;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    names.push_back(expand_term(terms[i], operands[i].ndim(), ellipsis_rank, i));
    for (std::size_t d = 0; d < names[i].size(); ++d) {
      const char c = names[i][d];
      if (names[i].find(c) != d)
        detail::raise<ShapeError>(kApi, "subscripts", terms[i], detail::concat("repeat '", c, "' within operand ", i),
                                  "diagonals (\"ii->i\") are not supported; use jnp.diagonal-style indexing");
      const std::int64_t n = operands[i].shape()[d];
      auto [it, fresh] = size.emplace(c, n);
      if (!fresh && it->second != n && it->second != 1 && n != 1)
        detail::raise<ShapeError>(kApi, "operands", std::string(subscripts),
                                  detail::concat("give axis '", c, "' sizes ", it->second, " and ", n, " (",
                                                 to_string(operands[0].aval()), operands.size() > 1 ? ", " : "",
                                                 operands.size() > 1 ? to_string(operands[1].aval()) : "", ")"));
      it->second = std::max(it->second, n);
    }
  }
  std::string out;
  if (arrow == std::string::npos) {  // implicit output: ellipsis axes, then letters used once, sorted
    for (std::size_t i = ellipsis_rank; i-- > 0;) out += static_cast<char>('0' + i);
    std::string once;
    for (const auto& [c, n] : size) {
      std::size_t uses = 0;
      for (const std::string& t : names) uses += static_cast<std::size_t>(std::count(t.begin(), t.end(), c));
      if (std::isalpha(static_cast<unsigned char>(c)) && uses == 1) once += c;
    }
    out += once;  // std::map iterates in sorted order
  } else {
    const std::string given = spec.substr(arrow + 2);
    const auto dots = given.find("...");
    out = given;
    if (dots != std::string::npos) {
      std::string ell;
      for (std::size_t i = ellipsis_rank; i-- > 0;) ell += static_cast<char>('0' + i);
      out = given.substr(0, dots) + ell + given.substr(dots + 3);
    }
    for (std::size_t d = 0; d < out.size(); ++d)
      if (!size.count(out[d]) || out.find(out[d]) != d)
        detail::raise<ShapeError>(kApi, "output subscripts", given,
                                  detail::concat("'", out[d], "' ", size.count(out[d]) ? "repeats" : "names no input axis"));
  }
  // Axes no one else needs are summed out first; size-1 axes meet their partner's size.
  std::vector<Array> xs;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::string others = out;
    for (std::size_t j = 0; j < names.size(); ++j)
      if (j != i) others += names[j];
    Array x = sum_out(operands[i], names[i], others);
    Shape target;
    for (char c : names[i]) target.push_back(size[c]);
    xs.push_back(broadcast_to(x, target));
  }
  if (xs.size() == 1) return to_order(xs[0], names[0], out);
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

Array einsum(std::string_view subscripts, const Array& a) { return einsum(subscripts, std::vector<Array>{a}); }
Array einsum(std::string_view subscripts, const Array& a, const Array& b, const PrecisionConfig& precision) {
  return einsum(subscripts, std::vector<Array>{a, b}, precision);
}

}  // namespace canopy
