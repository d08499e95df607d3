// Shared pieces of the differentiation rules.
#include "rules.hpp"

#include <algorithm>

namespace canopy::detail {

Array unbroadcast(const Array& ct, const Aval& to) {
  Array r = ct;
  if (!(ct.shape() == to.shape)) {
    std::vector<int> axes;
    std::size_t lead = ct.ndim() - to.ndim();
    for (std::size_t i = 0; i < lead; ++i) axes.push_back(static_cast<int>(i));
    for (std::size_t j = 0; j < to.ndim(); ++j)
      if (to.shape[j] == 1 && ct.shape()[lead + j] != 1) axes.push_back(static_cast<int>(lead + j));
    r = reshape(reduce_sum(r, axes), to.shape);
  }
  if (r.dtype() != to.dtype) r = convert_element_type(r, to.dtype);
  return r;
}

Array instantiate(const Array& t, const Aval& like) { return t.valid() ? t : zeros(like.shape, like.dtype); }

Array add_tangents(const Array& a, const Array& b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return add(a, b);
}

Array batch_to_front(const Array& x, int bdim) { return bdim < 0 ? x : move_axis(x, bdim, 0); }

Array front_or_broadcast(const Array& x, int bdim, std::int64_t n) {
  if (bdim >= 0) return move_axis(x, bdim, 0);
  auto dims = x.shape().vec();
  dims.insert(dims.begin(), n);
  return broadcast_to(x, Shape(dims));
}

std::int64_t batch_size(std::span<const Array> x, std::span<const int> bdims) {
  for (std::size_t i = 0; i < x.size(); ++i)
    if (bdims[i] >= 0) return x[i].shape()[static_cast<std::size_t>(bdims[i])];
  return 0;
}

Arrays batched_at_front(std::span<const Array> x, std::span<const int> bdims) {
  const std::int64_t n = batch_size(x, bdims);
  Arrays out;
  for (std::size_t i = 0; i < x.size(); ++i) out.push_back(front_or_broadcast(x[i], bdims[i], n));
  return out;
}

Arrays align_elementwise(std::span<const Array> x, std::span<const int> bdims) {
  std::size_t rank = 0;  // the common rank of one example
  for (std::size_t i = 0; i < x.size(); ++i) rank = std::max(rank, x[i].ndim() - (bdims[i] >= 0 ? 1 : 0));
  Arrays out;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (bdims[i] < 0) {
      out.push_back(x[i]);
      continue;
    }
    Array front = move_axis(x[i], bdims[i], 0);
    auto dims = front.shape().vec();
    dims.insert(dims.begin() + 1, rank - (front.ndim() - 1), 1);
    out.push_back(reshape(front, Shape(dims)));
  }
  return out;
}

std::vector<int> shift_axes(const std::vector<int>& axes, std::size_t example_rank) {
  std::vector<int> out;
  for (int a : axes) out.push_back((a < 0 ? a + static_cast<int>(example_rank) : a) + 1);
  return out;
}

}  // namespace canopy::detail
