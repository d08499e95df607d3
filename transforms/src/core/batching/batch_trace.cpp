// BatchTrace and vmap_flat: vectorising a function by carrying a batch axis through every
// primitive's batching rule.
#include "batch_trace.hpp"
#include "move_axis.hpp"

#include "../autodiff/jvp_trace.hpp"
#include "../../devices/runtime.hpp"
#include "canopy/core/batching.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"
#include "canopy/numpy.hpp"

namespace canopy::detail {

Trace* BatchTracer::trace() const { return trace_.get(); }

namespace {
/// The axis name of the vmap whose batching rule is running on this thread (see batching.hpp).
thread_local const std::string* rule_axis_name = nullptr;
struct RuleAxisName {
  const std::string* previous;
  explicit RuleAxisName(const std::string& name) : previous(rule_axis_name) { rule_axis_name = &name; }
  ~RuleAxisName() { rule_axis_name = previous; }
};
}  // namespace

std::string_view batching_axis_name() { return rule_axis_name ? std::string_view(*rule_axis_name) : std::string_view(); }

std::int64_t bound_axis_size(std::string_view axis_name) {
  for (Trace* t = current_trace(); t != nullptr; t = t->parent())
    if (auto* b = dynamic_cast<BatchTrace*>(t); b && b->active() && b->axis_name == axis_name) return b->axis_size;
  if (const AxisContext* pmapped = find_axis(axis_name)) return pmapped->size;
  return -1;
}

Array BatchTrace::box(Array value, int bdim) {
  if (bdim < 0) return value;
  Aval aval = value.aval();
  auto dims = aval.shape.vec();
  dims.erase(dims.begin() + bdim);
  aval.shape = Shape(dims);
  Device dev = value.device();
  return make_tracer(std::move(aval), dev, std::make_shared<BatchTracer>(shared_from_this(), std::move(value), bdim));
}

std::pair<Array, int> BatchTrace::unbox(const Array& x) const {
  if (auto* t = dynamic_cast<BatchTracer*>(x.tracer()); t && t->trace_.get() == this) return {t->value, t->bdim};
  return {x, -1};
}

Arrays BatchTrace::process(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) {
  Arrays values;
  std::vector<int> bdims;
  bool any = false;
  for (const Array& x : in) {
    auto [v, b] = unbox(x);
    any |= b >= 0;
    values.push_back(std::move(v));
    bdims.push_back(b);
  }
  TraceGuard below(parent());
  if (p.collective && p.collective_axis(params) == axis_name && !axis_name.empty()) {
    auto [outs, out_bdims] = p.collective(values, bdims, axis_size, params);
    Arrays res;
    for (std::size_t i = 0; i < outs.size(); ++i) res.push_back(box(std::move(outs[i]), out_bdims[i]));
    return res;
  }
  if (!any) return detail::bind(p, values, params);
  if (!p.batch)
    raise<UnimplementedRule>(p.name, "batching rule", "", "is not defined for this primitive",
                             "vmap needs one in its file");
  RuleAxisName naming(axis_name);
  auto [outs, out_bdims] = p.batch(values, bdims, params);
  Arrays res;
  for (std::size_t i = 0; i < outs.size(); ++i) res.push_back(box(std::move(outs[i]), out_bdims[i]));
  return res;
}

Array move_axis(const Array& x, int from, int to) {
  if (from == to) return x;
  std::vector<int> perm;
  for (int i = 0; i < static_cast<int>(x.ndim()); ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return transpose(x, perm);
}

Arrays vmap_flat(const FlatFn& f, const Arrays& in, const VmapSpec& spec) {
  // The batch size: every mapped input must agree, and agree with axis_size when given.
  std::int64_t size = spec.axis_size;
  std::ptrdiff_t size_from = -1;  // the input that set the size; -1: axis_size
  std::vector<int> axes(in.size(), -1);
  std::vector<std::string> names;  // key paths, built only for an error message
  auto name_of = [&](std::size_t i) {
    if (names.empty() && spec.in_names) names = spec.in_names();
    return i < names.size() ? names[i] : "args[" + std::to_string(i) + "]";
  };
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!spec.in_axes[i]) continue;
    int r = static_cast<int>(in[i].ndim());
    int a = *spec.in_axes[i];
    if (a < -r || a >= r)
      raise<ShapeError>("vmap", "in_axes", name_of(i),
                        concat("is ", a, " but the input is ", to_string(in[i].aval()), " (rank ", r, ")"),
                        "a mapped input needs the axis it is mapped over");
    axes[i] = a < 0 ? a + r : a;
    std::int64_t n = in[i].shape()[static_cast<std::size_t>(axes[i])];
    if (size < 0) {
      size = n;
      size_from = static_cast<std::ptrdiff_t>(i);
    } else if (n != size) {
      std::string from = size_from < 0 ? std::string("axis_size")
                                       : concat(name_of(static_cast<std::size_t>(size_from)), " ", to_string(in[static_cast<std::size_t>(size_from)].aval()));
      raise<ShapeError>("vmap", "batch sizes", "",
                        concat("differ: ", from, " has ", size, " but ", name_of(i), " ",
                               to_string(in[i].aval()), " has ", n, " along axis ", axes[i]),
                        "every mapped input needs the same size along its in_axis");
    }
  }
  if (size < 0)
    raise<ShapeError>("vmap", "in_axes", "", "map no input, so the batch size is unknown", "pass axis_size");
  auto trace = std::make_shared<BatchTrace>(current_trace(), size, spec.axis_name);
  Arrays boxed;
  for (std::size_t i = 0; i < in.size(); ++i) boxed.push_back(trace->box(in[i], axes[i]));
  Arrays out;
  {
    EndTrace ending{*trace};
    TraceGuard guard(trace.get());
    out = f(boxed);
  }
  std::vector<std::optional<int>> out_axes = spec.out_axes ? spec.out_axes() : std::vector<std::optional<int>>(out.size(), 0);
  Arrays res;
  for (std::size_t o = 0; o < out.size(); ++o) {
    auto [v, b] = trace->unbox(out[o]);
    std::optional<int> want = o < out_axes.size() ? out_axes[o] : std::optional<int>(0);
    if (!want) {
      if (b >= 0)
        raise<ShapeError>("vmap", "out_axes", concat("output ", o),
                          concat("is none but the output ", to_string(out[o].aval()), " depends on the mapped inputs"));
      res.push_back(v);
      continue;
    }
    int r = static_cast<int>(v.ndim()) + (b < 0 ? 1 : 0);
    int a = *want < 0 ? *want + r : *want;
    if (a < 0 || a >= r)
      raise<ShapeError>("vmap", "out_axes", concat("output ", o), concat("is ", *want, " but the batched output has rank ", r));
    if (b < 0) {  // not batched: every example has the same value
      auto s = v.shape().vec();
      s.insert(s.begin() + a, size);
      std::vector<int> dims;
      for (int d = 0; d < r; ++d)
        if (d != a) dims.push_back(d);
      res.push_back(broadcast_in_dim(v, s, dims));
    } else {
      res.push_back(move_axis(v, b, a));
    }
  }
  return res;
}

}  // namespace canopy::detail
