// jax.numpy indexing composed from gather/scatter: take, take_along_axis, x.at(idx) (AtIndexer),
// and jax.nn.one_hot (a comparison against iota).
#include "../primitives/slicing/windows.hpp"

namespace canopy {
namespace {

// numpy's negative indexing: i + n where i < 0 (unsigned indices cannot be negative). Signed
// indices narrower than i32 are widened first, since n may not fit their dtype.
Array wrap_negative(const Array& index, std::int64_t n) {
  if (is_unsigned(index.dtype())) return index;
  const Array i = itemsize(index.dtype()) < 4 ? index.astype(DType::i32) : index;
  return where(i < 0, i + full({}, static_cast<double>(n), i.dtype()), i);
}

// An index as the i32 that gather/scatter take: 32- and 64-bit dtypes are clamped to [-1, n] first,
// so an index out of range stays out of range (filled, dropped or clipped) instead of wrapping
// into it.
Array as_i32_index(const Array& i, std::int64_t n) {
  if (i.dtype() == DType::i32 || itemsize(i.dtype()) < 4) return i.astype(DType::i32);
  Array c = min(i, full({}, static_cast<double>(n), i.dtype()));
  if (!is_unsigned(i.dtype())) c = max(c, full({}, -1.0, i.dtype()));
  return c.astype(DType::i32);
}

std::vector<int> range(int from, int to) {
  std::vector<int> r;
  for (int i = from; i < to; ++i) r.push_back(i);
  return r;
}

Shape shape_slice(const Shape& s, std::size_t from, std::size_t to) {
  return Shape(std::span<const std::int64_t>(s.begin() + from, s.begin() + to));
}

}  // namespace

Array take(const Array& x, const Array& indices, std::optional<int> axis, GatherScatterMode mode,
           std::optional<double> fill_value) {
  detail::expect_index("take", "indices", indices.aval(), 1);
  Array a = axis ? x : reshape(x, {-1});
  const int ax = detail::normalize_axis("take", axis.value_or(0), a.ndim(), a.aval());
  const auto uax = static_cast<std::size_t>(ax);
  const std::int64_t n = a.shape()[uax];
  Shape out = shape_slice(a.shape(), 0, uax);
  for (auto d : indices.shape()) out.push_back(d);
  for (std::size_t d = uax + 1; d < a.ndim(); ++d) out.push_back(a.shape()[d]);
  if (n == 0 && indices.size() != 0)
    detail::raise<ShapeError>("take", "indices", "argument 1",
                              detail::concat(to_string(indices.aval()), " index the empty axis ", ax, " of ",
                                             to_string(a.aval())),
                              "a non-empty take from an empty axis has nothing to read");
  if (indices.size() == 0) return zeros(out, a.dtype());
  Array idx = mode == GatherScatterMode::fill_or_drop ? wrap_negative(indices, n) : indices;
  const int ir = static_cast<int>(indices.ndim()), r = static_cast<int>(a.ndim());
  GatherDimensionNumbers dn{range(0, ax), {ax}, {ax}};
  for (int d : range(ax + ir, r + ir - 1)) dn.offset_dims.push_back(d);
  Shape sizes = a.shape();
  sizes[uax] = 1;
  return gather(a, expand_dims(idx, {-1}), dn, sizes, mode, fill_value);
}

Array take_along_axis(const Array& x, const Array& indices, std::optional<int> axis, GatherScatterMode mode,
                      std::optional<double> fill_value) {
  detail::expect_index("take_along_axis", "indices", indices.aval(), 1);
  Array a = x;
  if (!axis) {
    if (indices.ndim() != 1)
      detail::raise<ShapeError>("take_along_axis", "indices", "argument 1",
                                detail::concat(to_string(indices.aval()), " must be 1-D when axis is None"));
    a = reshape(x, {-1});
  }
  if (a.ndim() != indices.ndim())
    detail::raise<ShapeError>("take_along_axis", "indices", "argument 1",
                              detail::concat(to_string(indices.aval()), " must have the rank of ", to_string(a.aval())));
  const auto ax = static_cast<std::size_t>(detail::normalize_axis("take_along_axis", axis.value_or(0), a.ndim(), a.aval()));
  const std::size_t r = a.ndim();
  Shape unit_axis = a.shape();
  unit_axis[ax] = 1;
  const Shape out = broadcast_shapes(indices.shape(), unit_axis, "take_along_axis");
  if (a.shape()[ax] == 0 || shape_size(out) == 0) return zeros(out, a.dtype());
  Array idx = mode == GatherScatterMode::promise_in_bounds ? indices : wrap_negative(indices, a.shape()[ax]);
  // Every dim but `axis` is either indexed by an iota (sizes match), taken whole as a window
  // (indices has 1 there) or dropped from x (x has 1 there; indices broadcast over it).
  std::vector<std::size_t> batch_dims;
  for (std::size_t i = 0; i < r; ++i)
    if (i == ax || indices.shape()[i] != 1) batch_dims.push_back(i);
  Shape batch;
  for (auto i : batch_dims) batch.push_back(out[i]);
  batch.push_back(1);
  std::vector<Array> parts;
  GatherDimensionNumbers dn;
  Shape kept, sizes;
  int j = 0;
  for (std::size_t i = 0, bj = 0; i < r; ++i) {
    const bool batched = bj < batch_dims.size() && batch_dims[bj] == i;
    if (i == ax) {
      parts.push_back(as_i32_index(reshape(idx, batch), a.shape()[ax]));
    } else if (!batched) {
      dn.offset_dims.push_back(static_cast<int>(i));
      kept.push_back(a.shape()[i]);
      sizes.push_back(a.shape()[i]);
      ++j;
      continue;
    } else if (a.shape()[i] == 1) {
      ++bj;
      continue;  // dropped from x below
    } else {
      parts.push_back(iota(DType::i32, batch, static_cast<int>(bj)));
    }
    dn.collapsed_slice_dims.push_back(j);
    dn.start_index_map.push_back(j);
    kept.push_back(a.shape()[i]);
    sizes.push_back(1);
    ++j;
    ++bj;
  }
  return gather(reshape(a, kept), concatenate(parts, -1), dn, sizes, mode, fill_value);
}

Array one_hot(const Array& x, std::int64_t num_classes, DType dtype, int axis) {
  Aval out{dtype, x.shape(), false};
  out.shape.push_back(num_classes);
  const int ax = detail::normalize_axis("one_hot", axis, out.ndim(), out);
  Shape classes;
  classes.resize(out.ndim(), 1);
  classes[static_cast<std::size_t>(ax)] = num_classes;
  Array cls = iota(x.dtype() == DType::bool_ ? DType::i32 : x.dtype(), classes, ax);
  return (expand_dims(x, {ax}) == cls).astype(dtype);
}

namespace {

struct AtPlan {
  Array indices;  // the broadcast, normalised index vectors: batch shape + [k]
  Shape batch;
  std::size_t k;
};

AtPlan plan_at(const Array& x, const std::vector<Array>& idx, const char* api) {
  if (idx.empty() || idx.size() > x.ndim())
    detail::raise<ShapeError>(api, "indices", "", detail::concat(idx.size(), " index arrays for ", to_string(x.aval())),
                              "index between 1 and rank leading axes");
  Shape batch;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    detail::expect_index(api, "index", idx[i].aval(), static_cast<int>(i));
    batch = broadcast_shapes(batch, idx[i].shape(), api);
  }
  std::vector<Array> cols;
  for (std::size_t i = 0; i < idx.size(); ++i)
    cols.push_back(expand_dims(broadcast_to(as_i32_index(wrap_negative(idx[i], x.shape()[i]), x.shape()[i]), batch), {-1}));
  return {concatenate(cols, -1), batch, idx.size()};
}

Array scatter_at(const Array& x, const std::vector<Array>& idx, const Array& values, GatherScatterMode mode, bool add,
                 const char* api) {
  AtPlan p = plan_at(x, idx, api);
  Shape target = p.batch;
  for (std::size_t d = p.k; d < x.ndim(); ++d) target.push_back(x.shape()[d]);
  if (!(broadcast_shapes(values.shape(), target, api) == target))
    detail::raise<ShapeError>(api, "values", "", detail::concat(to_string(values.aval()), " cannot be broadcast to the indexed ",
                                                                to_string(target)));
  Array v = broadcast_to(values.astype(x.dtype()), target);
  const int b = static_cast<int>(p.batch.size());
  ScatterDimensionNumbers dn{range(b, b + static_cast<int>(x.ndim() - p.k)), range(0, static_cast<int>(p.k)),
                             range(0, static_cast<int>(p.k))};
  return add ? scatter_add(x, p.indices, v, dn, mode) : scatter(x, p.indices, v, dn, mode);
}

}  // namespace

Array AtIndexer::get(GatherScatterMode mode, std::optional<double> fill_value) const {
  AtPlan p = plan_at(x_, indices_, "at.get");
  Shape out = p.batch;
  for (std::size_t d = p.k; d < x_.ndim(); ++d) out.push_back(x_.shape()[d]);
  for (std::size_t d = 0; d < p.k; ++d)
    if (x_.shape()[d] == 0 && shape_size(p.batch) != 0)
      detail::raise<ShapeError>("at.get", "indices", "", detail::concat("index the empty axis ", d, " of ", to_string(x_.aval())),
                                "there is nothing to read");
  if (shape_size(out) == 0) return zeros(out, x_.dtype());
  const int b = static_cast<int>(p.batch.size()), k = static_cast<int>(p.k);
  GatherDimensionNumbers dn{range(b, b + static_cast<int>(x_.ndim()) - k), range(0, k), range(0, k)};
  Shape sizes = x_.shape();
  for (std::size_t d = 0; d < p.k; ++d) sizes[d] = 1;
  return gather(x_, p.indices, dn, sizes, mode, fill_value);
}
Array AtIndexer::set(const Array& values, GatherScatterMode mode) const {
  return scatter_at(x_, indices_, values, mode, false, "at.set");
}
Array AtIndexer::add(const Array& values, GatherScatterMode mode) const {
  return scatter_at(x_, indices_, values, mode, true, "at.add");
}

AtIndexer Array::at(const Array& index) const { return AtIndexer(*this, {index}); }
AtIndexer Array::at(std::vector<Array> indices) const { return AtIndexer(*this, std::move(indices)); }
AtIndexer Array::at(std::int64_t index) const {
  return AtIndexer(*this, {scalar(static_cast<std::int32_t>(index))});
}
AtIndexer Array::at(std::initializer_list<std::int64_t> indices) const {
  std::vector<Array> idx;
  for (std::int64_t i : indices) idx.push_back(scalar(static_cast<std::int32_t>(i)));
  return AtIndexer(*this, std::move(idx));
}

}  // namespace canopy
