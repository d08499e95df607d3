// The building blocks of jvp and transpose rules, written with public Array ops so that the
// rules' own operations can be traced again (grad of grad, jvp of grad).
#pragma once

#include <span>
#include <utility>

#include "../core/batching/move_axis.hpp"
#include "canopy/numpy.hpp"
#include "common.hpp"

namespace canopy::detail {

/// (primal outputs, tangent outputs) as jvp rules return them.
using JvpResult = std::pair<Arrays, Arrays>;

/// ct summed down to `to` (undoing the numpy broadcast of a binary primitive), in to's dtype.
Array unbroadcast(const Array& ct, const Aval& to);

/// t itself, or zeros of `like` when t is a symbolic zero (an invalid Array).
Array instantiate(const Array& t, const Aval& like);

/// a + b where either may be a symbolic zero (the result is one only if both are).
Array add_tangents(const Array& a, const Array& b);

/// jvp of y = f(x) elementwise: (y, t * f'(x)), where deriv(x, y) gives f'(x).
template <class Fwd, class Deriv>
JvpResult unary_jvp(std::span<const Array> primals, std::span<const Array> tangents, Fwd fwd, Deriv deriv) {
  Array y = fwd(primals[0]);
  Array d = deriv(primals[0], y);
  return {{y}, {mul(tangents[0], d)}};
}

/// jvp of a piecewise-constant op (floor, sign, ...): a zero tangent.
template <class Fwd>
JvpResult zero_jvp(std::span<const Array> primals, Fwd fwd) {
  return {{fwd(primals[0])}, {Array()}};
}

/// (batched outputs, their batch dims) as batching rules return them.
using BatchResult = std::pair<Arrays, std::vector<int>>;

/// x with its batch axis first; unbatched (bdim < 0) values are returned unchanged.
Array batch_to_front(const Array& x, int bdim);

/// x with its batch axis first, or x broadcast along a new leading axis of size n if unbatched.
Array front_or_broadcast(const Array& x, int bdim, std::int64_t n);

/// The batch size: the size of the first batched operand's batch axis.
std::int64_t batch_size(std::span<const Array> x, std::span<const int> bdims);

/// Every operand with a leading batch axis (front_or_broadcast). For primitives that take whole
/// batches of their own (the random_* key primitives) or that require equal operand shapes.
Arrays batched_at_front(std::span<const Array> x, std::span<const int> bdims);

/// Operands of a broadcasting elementwise primitive, made to broadcast under a leading batch
/// axis: batched ones get it first plus size-1 axes up to the common rank, unbatched ones stay.
Arrays align_elementwise(std::span<const Array> x, std::span<const int> bdims);

/// The batching rule of an elementwise primitive P: apply P to the aligned operands.
template <class P>
BatchResult batch_elementwise(std::span<const Array> x, std::span<const int> bdims, const typename P::Params& params) {
  if (x.size() == 1) return {canopy::bind<P>(x, params), {bdims[0]}};  // unary: the batch axis stays where it is
  Arrays a = align_elementwise(x, bdims);
  return {canopy::bind<P>(a, params), {0}};
}

/// Reduction axes of one example, as axes of the batch-first value.
std::vector<int> shift_axes(const std::vector<int>& axes, std::size_t example_rank);

}  // namespace canopy::detail
