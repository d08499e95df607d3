// vmap as a trace: each tracer carries a value with one extra axis (its batch dimension);
// every primitive applied to one runs its batching rule one level down, so the batched
// computation can itself be differentiated, batched again or staged.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "canopy/core/custom.hpp"
#include "canopy/core/trace.hpp"
#include "../array_impl.hpp"

namespace canopy::detail {

class BatchTrace;

/// A batched value: `value` has the batch at axis `bdim`; the tracer's aval is one example's.
class BatchTracer final : public TracerImpl {
 public:
  BatchTracer(std::shared_ptr<BatchTrace> trace, Array value, int bdim)
      : trace_(std::move(trace)), value(std::move(value)), bdim(bdim) {}
  Trace* trace() const override;
  std::shared_ptr<BatchTrace> trace_;
  Array value;
  int bdim;
};

class BatchTrace final : public Trace, public std::enable_shared_from_this<BatchTrace> {
 public:
  BatchTrace(Trace* parent, std::int64_t axis_size, std::string axis_name)
      : Trace(parent), axis_size(axis_size), axis_name(std::move(axis_name)) {}
  Arrays process(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) override;
  Arrays process_custom(const CustomRule& rule, std::span<const Array> in) override;  // custom_rules.cpp
  /// A tracer of this trace (bdim >= 0), or `value` itself when it is not batched (bdim < 0).
  Array box(Array value, int bdim);
  /// (value, bdim) as this trace sees x: values of other traces are unbatched (bdim -1).
  std::pair<Array, int> unbox(const Array& x) const;

  const std::int64_t axis_size;
  const std::string axis_name;
};

}  // namespace canopy::detail
