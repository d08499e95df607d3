// jnp's x[index]: numpy's basic indexing (integers, slices, newaxis, ellipsis) as rev + slice +
// reshape, and advanced indexing (integer arrays) as one gather, with numpy's placement of the
// broadcast index dimensions.
#include <algorithm>

#include "canopy/error.hpp"
#include "canopy/numpy.hpp"

namespace canopy {
namespace {

constexpr const char* kApi = "x[index]";

/// Python's slice.indices(n): (start, stop, step) in range for an axis of n elements.
std::array<std::int64_t, 3> slice_indices(const Slice& s, std::int64_t n) {
  if (s.step == 0) detail::raise<ShapeError>(kApi, "slice step", "", "is 0", "a slice needs a nonzero step");
  auto bound = [&](std::optional<std::int64_t> v, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
    if (!v) return fallback;
    std::int64_t i = *v < 0 ? *v + n : *v;
    return std::clamp(i, lo, hi);
  };
  if (s.step > 0) return {bound(s.start, 0, 0, n), bound(s.stop, n, 0, n), s.step};
  return {bound(s.start, n - 1, -1, n - 1), bound(s.stop, -1, -1, n - 1), s.step};
}

std::string index_text(const Array& x, std::span<const Index> index) {
  return detail::concat(to_string(x.aval()), " with ", index.size(), " index entries");
}

bool has_array_index(std::span<const Index> index) {
  return std::any_of(index.begin(), index.end(), [](const Index& i) { return i.kind() == Index::Kind::array; });
}

// One entry per axis taken or added: the ellipsis expanded into full slices, and missing
// trailing entries are full slices too.
std::vector<Index> full_index(const Array& x, std::span<const Index> index) {
  std::size_t consumed = 0, ellipses = 0;
  for (const Index& i : index) {
    consumed += i.kind() == Index::Kind::integer || i.kind() == Index::Kind::slice || i.kind() == Index::Kind::array;
    ellipses += i.kind() == Index::Kind::ellipsis;
  }
  if (ellipses > 1) detail::raise<ShapeError>(kApi, "index", index_text(x, index), "has more than one ellipsis");
  if (consumed > x.ndim())
    detail::raise<ShapeError>(kApi, "index", index_text(x, index), detail::concat("has ", consumed, " entries that take an axis"),
                              "at most one per axis");
  std::vector<Index> full;
  for (const Index& i : index) {
    if (i.kind() != Index::Kind::ellipsis) {
      full.push_back(i);
      continue;
    }
    for (std::size_t k = consumed; k < x.ndim(); ++k) full.push_back(slice(std::nullopt, std::nullopt));
  }
  for (std::size_t k = consumed + (ellipses ? x.ndim() - consumed : 0); k < x.ndim(); ++k) full.push_back(slice(std::nullopt, std::nullopt));
  return full;
}

// The basic part of an index: per axis of x a strided slice (integers are slices of one,
// squeezed; negative steps reverse the axis first), and the axes indexed by arrays.
struct BasicIndex {
  std::vector<std::int64_t> start, limit, strides;
  std::vector<int> reversed;
  Shape out_shape;             // the basic result (without advanced indexing)
  std::vector<int> array_axes;  // axes of x indexed by arrays
  std::vector<Array> arrays;

  explicit BasicIndex(std::size_t rank) : start(rank), limit(rank), strides(rank, 1) {}

  void take_integer(const Array& x, std::size_t axis, std::int64_t i) {
    const std::int64_t n = x.shape()[axis];
    const std::int64_t k = std::clamp(i < 0 ? i + n : i, std::int64_t{0}, std::max<std::int64_t>(n - 1, 0));
    if (n == 0) detail::raise<ShapeError>(kApi, "integer index", std::to_string(i), detail::concat("indexes the empty axis ", axis, " of ", to_string(x.aval())));
    start[axis] = k;
    limit[axis] = k + 1;
  }

  // With array indices present, integers are 0-d index arrays (numpy broadcasts them with the rest).
  void take_array(std::size_t axis, std::int64_t n, Array a) {
    if (!is_integer(a.dtype()))
      detail::raise<TypeError>(kApi, "array index", detail::concat("entry for axis ", axis),
                               detail::concat("is ", to_string(a.aval()), ", not an integer array"),
                               a.dtype() == DType::bool_ ? "boolean masks have a data-dependent shape; use where()" : "");
    array_axes.push_back(static_cast<int>(axis));
    arrays.push_back(std::move(a));
    start[axis] = 0;
    limit[axis] = n;
    out_shape.push_back(n);
  }

  void take_slice(std::size_t axis, std::int64_t n, const Slice& s) {
    auto [b, e, step] = slice_indices(s, n);
    if (step < 0) {  // reverse the axis, then slice it forwards
      reversed.push_back(static_cast<int>(axis));
      b = n - 1 - b;
      e = n - 1 - e;
      step = -step;
    }
    const std::int64_t count = e > b ? (e - b + step - 1) / step : 0;
    start[axis] = b;
    limit[axis] = count > 0 ? b + (count - 1) * step + 1 : b;
    strides[axis] = step;
    out_shape.push_back(count);
  }
};

BasicIndex basic_index(const Array& x, const std::vector<Index>& full, bool advanced) {
  BasicIndex basic(x.ndim());
  std::size_t axis = 0;
  for (const Index& i : full) {
    if (i.kind() == Index::Kind::newaxis) {
      if (advanced)
        detail::raise<UnimplementedRule>(kApi, "newaxis", "", "together with array indices is not supported",
                                         "index with the arrays first, then add the axis with expand_dims");
      basic.out_shape.push_back(1);
      continue;
    }
    const std::int64_t n = x.shape()[axis];
    if (i.kind() == Index::Kind::integer && !advanced)
      basic.take_integer(x, axis, i.integer());
    else if (i.kind() == Index::Kind::integer)
      basic.take_array(axis, n, scalar(static_cast<std::int32_t>(i.integer())));
    else if (i.kind() == Index::Kind::array)
      basic.take_array(axis, n, i.array());
    else
      basic.take_slice(axis, n, i.slice());
    ++axis;
  }
  return basic;
}

// The advanced part on the sliced y: the indexed axes to the front, one gather, the broadcast
// index dims back in place of the first indexed axis when the indexed axes were adjacent (numpy's rule).
Array gather_arrays(const Array& y, const BasicIndex& basic) {
  const std::vector<int>& array_axes = basic.array_axes;
  const std::size_t rank = y.ndim();
  std::vector<int> perm(array_axes.begin(), array_axes.end());
  for (int d = 0; d < static_cast<int>(rank); ++d)
    if (std::find(array_axes.begin(), array_axes.end(), d) == array_axes.end()) perm.push_back(d);
  Array g = transpose(y, perm).at(basic.arrays).get();
  const bool adjacent = array_axes.back() - array_axes.front() + 1 == static_cast<int>(array_axes.size());
  if (!adjacent || array_axes.front() == 0) return g;
  const int b = static_cast<int>(g.ndim()) - static_cast<int>(rank - array_axes.size());  // broadcast index dims
  std::vector<int> back;
  for (int d = 0; d < array_axes.front(); ++d) back.push_back(b + d);
  for (int d = 0; d < b; ++d) back.push_back(d);
  for (int d = b + array_axes.front(); d < static_cast<int>(g.ndim()); ++d) back.push_back(d);
  return transpose(g, back);
}

}  // namespace

Array subscript(const Array& x, std::span<const Index> index) {
  const bool advanced = has_array_index(index);
  const std::vector<Index> full = full_index(x, index);
  const BasicIndex basic = basic_index(x, full, advanced);
  Array y = basic.reversed.empty() ? x : rev(x, basic.reversed);
  y = slice(y, basic.start, basic.limit, basic.strides);
  if (!advanced) return reshape(y, basic.out_shape);
  return gather_arrays(y, basic);
}

Array Array::operator[](const Index& index) const { return subscript(*this, std::span<const Index>(&index, 1)); }
Array Array::operator[](std::initializer_list<Index> index) const {
  return subscript(*this, std::span<const Index>(index.begin(), index.size()));
}

}  // namespace canopy
