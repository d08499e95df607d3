// Dimension-number checks and window offset tables shared by the slicing primitives.
#include "windows.hpp"


#include <algorithm>
#include <cstring>
#include <limits>

namespace canopy::detail {

void expect_dims(std::string_view prim, std::string_view what, const std::vector<int>& dims, std::size_t bound,
                 bool sorted, const Aval& about) {
  std::vector<bool> seen(bound, false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    int d = dims[i];
    bool ok = d >= 0 && static_cast<std::size_t>(d) < bound && !seen[static_cast<std::size_t>(d)] &&
              (!sorted || i == 0 || dims[i - 1] < d);
    if (!ok)
      raise<ShapeError>(prim, what, list_text(std::span<const int>(dims)),
                        concat("must be distinct", sorted ? ", increasing" : "", " dims in [0, ", bound, ") (operand ",
                               to_string(about), ")"));
    seen[static_cast<std::size_t>(d)] = true;
  }
}

void expect_index(std::string_view prim, std::string_view what, const Aval& a, int arg) {
  if (!is_integer(a.dtype))
    raise<TypeError>(prim, what, "argument " + std::to_string(arg), concat(to_string(a), " must be an integer array"));
}

std::vector<std::int64_t> offset_table(std::span<const std::int64_t> sizes, std::span<const std::int64_t> strides) {
  std::vector<std::int64_t> t{0};
  t.reserve(static_cast<std::size_t>(shape_size(sizes)));
  // Grow dim by dim from the outermost: each pass repeats the table once per index of the next dim.
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    std::vector<std::int64_t> next;
    next.reserve(t.size() * static_cast<std::size_t>(sizes[d]));
    for (std::int64_t base : t)
      for (std::int64_t i = 0; i < sizes[d]; ++i) next.push_back(base + i * strides[d]);
    t = std::move(next);
  }
  return t;
}

WindowBounds window_bounds(std::span<const int> dim_map, const Shape& operand_shape, std::span<const std::int64_t> extent,
                           bool clip) {
  const Shape strides = contiguous_strides(operand_shape);
  WindowBounds b{{}, {}, clip, true};
  for (int m : dim_map) {
    const auto d = static_cast<std::size_t>(m);
    b.bound.push_back(operand_shape[d] - extent[d]);
    b.stride.push_back(strides[d]);
    b.disjoint_unless_equal = b.disjoint_unless_equal && extent[d] == 1;
  }
  return b;
}

std::vector<std::int64_t> window_starts(const Array& indices, const WindowBounds& bounds) {
  const Shape& is = indices.shape();
  const auto nb = shape_size(std::span<const std::int64_t>(is.begin(), is.size() - 1));
  const kernels::WindowStartMap start = bounds.map(cdata(indices), indices.dtype());
  std::vector<std::int64_t> starts(static_cast<std::size_t>(nb));
  for (std::int64_t b = 0; b < nb; ++b) starts[static_cast<std::size_t>(b)] = start(b);
  return starts;
}

double default_fill_value(DType d) {
  // jnp's fill for out-of-range gathers: NaN, lowest signed, highest unsigned, true.
  return visit_dtype(d, []<class T>(std::type_identity<T>) -> double {
    if constexpr (std::is_same_v<T, bool>) return 1;
    else if constexpr (std::is_signed_v<T> && std::is_integral_v<T>) return static_cast<double>(std::numeric_limits<T>::min());
    else if constexpr (std::is_integral_v<T>) return static_cast<double>(std::numeric_limits<T>::max());
    else return std::numeric_limits<double>::quiet_NaN();
  });
}

ElementBytes::ElementBytes(DType d, double v) { kernels::cpu::convert(DType::f64, d, &v, bytes, 1); }

}  // namespace canopy::detail

namespace canopy::detail {

Aval scatter_aval(std::string_view prim, std::span<const Aval> avals, const ScatterDimensionNumbers& dn, unsigned kinds) {
  const Aval &a = avals[0], &idx = avals[1], &u = avals[2];
  expect_kind(prim, a, kinds, 0);
  expect_index(prim, "scatter_indices", idx, 1);
  if (u.dtype != a.dtype)
    raise<TypeError>(prim, "updates", "argument 2", concat(to_string(u), " must have the operand's dtype ", to_string(a)));
  if (idx.ndim() == 0 || idx.shape.back() != static_cast<std::int64_t>(dn.scatter_dims_to_operand_dims.size()))
    raise<ShapeError>(prim, "scatter_indices", "argument 1",
                      concat(to_string(idx), " must end in an index vector of length ",
                             dn.scatter_dims_to_operand_dims.size(), " (scatter_dims_to_operand_dims)"));
  if (dn.update_window_dims.size() + dn.inserted_window_dims.size() != a.ndim() ||
      u.ndim() != idx.ndim() - 1 + dn.update_window_dims.size())
    raise<ShapeError>(prim, "updates", "argument 2",
                      concat(to_string(u), " with ", dn.update_window_dims.size(), " window and ",
                             dn.inserted_window_dims.size(), " inserted dims does not fit the operand ", to_string(a),
                             " and indices ", to_string(idx)),
                      "updates rank = indices rank - 1 + window dims, window + inserted dims = operand rank");
  expect_dims(prim, "update_window_dims", dn.update_window_dims, u.ndim(), true, a);
  expect_dims(prim, "inserted_window_dims", dn.inserted_window_dims, a.ndim(), true, a);
  expect_dims(prim, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims, a.ndim(), false, a);
  std::vector<bool> inserted(a.ndim(), false), window(u.ndim(), false);
  for (int d : dn.inserted_window_dims) inserted[static_cast<std::size_t>(d)] = true;
  for (int d : dn.update_window_dims) window[static_cast<std::size_t>(d)] = true;
  std::size_t od = 0, bd = 0;
  for (std::size_t i = 0; i < u.ndim(); ++i) {
    bool ok;
    if (window[i]) {
      while (inserted[od]) ++od;
      ok = u.shape[i] <= a.shape[od++];
    } else {
      ok = u.shape[i] == idx.shape[bd++];
    }
    if (!ok)
      raise<ShapeError>(prim, "updates", "argument 2",
                        concat(to_string(u), " does not fit the operand ", to_string(a), " and indices ", to_string(idx),
                               " at updates dimension ", i),
                        "window dims must fit the operand, the others must equal the index batch dims");
  }
  return {a.dtype, a.shape, a.weak_type};
}


ScatterTables scatter_tables(const Array& a, const Array& u, const ScatterDimensionNumbers& dn, GatherScatterMode mode) {
  Shape ast = contiguous_strides(a.shape()), ust = contiguous_strides(u.shape());
  std::vector<bool> inserted(a.ndim(), false), window(u.ndim(), false);
  for (int d : dn.inserted_window_dims) inserted[static_cast<std::size_t>(d)] = true;
  for (int d : dn.update_window_dims) window[static_cast<std::size_t>(d)] = true;
  Shape batch_sizes, batch_ust, win_sizes, win_ust, win_ast;
  std::vector<std::int64_t> extent(a.ndim(), 1);
  for (std::size_t i = 0, od = 0; i < u.ndim(); ++i) {
    if (!window[i]) { batch_sizes.push_back(u.shape()[i]); batch_ust.push_back(ust[i]); continue; }
    while (inserted[od]) ++od;
    win_sizes.push_back(u.shape()[i]);
    win_ust.push_back(ust[i]);
    win_ast.push_back(ast[od]);
    extent[od++] = u.shape()[i];
  }
  return {offset_table(batch_sizes, batch_ust), offset_table(win_sizes, win_ust),
          window_bounds(dn.scatter_dims_to_operand_dims, a.shape(), extent, mode == GatherScatterMode::clip),
          offset_table(win_sizes, win_ast)};
}




}  // namespace canopy::detail
