// What a primitive is: a rules table (PrimitiveInfo) built from one struct per primitive, plus
// bind(), which hands an application to the innermost trace. Included by primitive .cpp files.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/core/params.hpp"
#include "canopy/core/params_perturb.hpp"
#include "canopy/core/registry.hpp"
#include "canopy/precision.hpp"
#include "canopy/core/trace.hpp"
#include "canopy/device.hpp"

namespace canopy {

/// A type-erased reference to a primitive's Params aggregate (valid during the call).
struct ParamsRef {
  const void* ptr = nullptr;
  const std::type_info* type = nullptr;
  /// The typed params; the caller knows the primitive, hence the type.
  template <class Params>
  const Params& get() const {
    return *static_cast<const Params*>(ptr);
  }
};

// Erased rule signatures; rule parameters keep fixed names (primals, tangents, cotangent,
// params, bdims, avals), as transforms/README.md "Adding a primitive" shows.
/// Output avals from input avals.
using AbstractEvalFn = std::vector<Aval> (*)(std::span<const Aval> avals, const ParamsRef& params);
/// Eager kernel: `out` holds freshly allocated concrete arrays with the abstract_eval avals.
using KernelFn = void (*)(std::span<const Array> in, std::span<Array> out, const ParamsRef& params);
/// A primitive's kernels, one slot per device kind. The backends fill the slots from their own
/// folders (transforms/src/backends/<kind>/) with detail::register_kernel; a slot still empty
/// when first read is resolved then (PrimitiveInfo::kernel), so the order in which the static
/// initialisers of primitive files and backend files run does not matter. A slot goes from null
/// to its kernel once, and may be filled on a const table (rules tables are const statics).
class KernelTable {
 public:
  KernelTable() = default;
  KernelTable(const KernelTable& other) noexcept { *this = other; }
  KernelTable& operator=(const KernelTable& other) noexcept {
    for (std::size_t i = 0; i < Device::kinds; ++i) slots_[i].store(other.slots_[i].load(std::memory_order_acquire));
    return *this;
  }
  /// The kernel in `kind`'s slot, or null.
  KernelFn get(Device::Kind kind) const noexcept {
    return slots_[static_cast<std::size_t>(kind)].load(std::memory_order_acquire);
  }
  /// Puts `kernel` in `kind`'s slot.
  void set(Device::Kind kind, KernelFn kernel) const noexcept {
    slots_[static_cast<std::size_t>(kind)].store(kernel, std::memory_order_release);
  }

 private:
  mutable std::array<std::atomic<KernelFn>, Device::kinds> slots_{};
};

/// Forward mode: (primal outputs, tangent outputs). An invalid Array tangent is a symbolic zero.
using JvpFn = std::pair<Arrays, Arrays> (*)(std::span<const Array> primals, std::span<const Array> tangents,
                                            const ParamsRef& params);
/// Linear primitives only: cotangents of the linear inputs (invalid Array = not linear in it).
/// `primals` holds the non-linear inputs (linear ones are invalid Arrays with their aval in `avals`).
using TransposeFn = Arrays (*)(std::span<const Array> cotangent, std::span<const Array> primals,
                               std::span<const Aval> avals, const ParamsRef& params);
/// vmap: batched outputs and their batch dims; bdims[i] == -1 means input i is unbatched.
using BatchFn = std::pair<Arrays, std::vector<int>> (*)(std::span<const Array> primals, std::span<const int> bdims,
                                                        const ParamsRef& params);

/// The params of the collectives that need nothing but their axis (psum, pmax, all_gather...).
struct CollectiveParams {
  std::string axis_name;
};
/// A collective over the mapped axis of the vmap that binds its axis name: batched inputs and
/// their batch dims (-1: unbatched) and the axis size in, outputs and their batch dims out.
using CollectiveFn = std::pair<Arrays, std::vector<int>> (*)(std::span<const Array> x, std::span<const int> bdims,
                                                             std::int64_t axis_size, const ParamsRef& params);

/// One input set a generic test runs the primitive on.
template <class Params>
struct Sample {
  Arrays inputs;
  Params params{};
  std::string note;
};

/// A sample with its params erased (owned).
struct ErasedSample {
  Arrays inputs;
  std::shared_ptr<const void> params;
  const std::type_info* type = nullptr;
  std::string note;
  ParamsRef ref() const { return {params.get(), type}; }
};

/// How jit lowers a primitive, declared next to its other rules (`static constexpr Lowering
/// lowering = ...`): elementwise kinds fuse into one loop over tiles (jit's fuse_elementwise
/// pass), everything else runs its own kernel.
struct Lowering {
  enum class Kind : std::uint8_t {
    opaque,     ///< its own kernel (matmul, reductions, shape changes, ...)
    unary,      ///< out[i] = op(x[i]); `op` is a kernels::UnaryOp
    binary,     ///< out[i] = op(x[i], y[i]) with numpy broadcasting; `op` is a kernels::BinaryOp
    select,     ///< select_n(which, case0, case1)
    convert,    ///< convert_element_type
    broadcast,  ///< broadcast_in_dim: a view of its operand
    uniform01,  ///< out[i] = the unit float of element i under a u32[2] key: a source of a fused loop
    reduction,  ///< a reduction over `reduction_axes`; `op` is a kernels::ReduceOp: it may consume a fused loop
    log_softmax,  ///< log_softmax along `reduction_axes` (one): a row step of a fused loop when that axis is the last
  };
  Kind kind = Kind::opaque;
  std::uint8_t op = 0;

  template <class UnaryOp>
  static constexpr Lowering unary(UnaryOp o) {
    return {Kind::unary, static_cast<std::uint8_t>(o)};
  }
  template <class BinaryOp>
  static constexpr Lowering binary(BinaryOp o) {
    return {Kind::binary, static_cast<std::uint8_t>(o)};
  }
  template <class ReduceOp>
  static constexpr Lowering reduction(ReduceOp o) {
    return {Kind::reduction, static_cast<std::uint8_t>(o)};
  }
  static constexpr Lowering of(Kind k) { return {k, 0}; }
};

/// How many inputs a primitive takes, declared next to its rules (`static constexpr Arity arity =
/// Arity::exactly(2);`). bind checks it before any rule runs, so no rule indexes past its inputs.
struct Arity {
  int min = 0;
  int max = -1;  ///< -1: no upper bound
  static constexpr Arity exactly(int n) { return {n, n}; }
  static constexpr Arity at_least(int n) { return {n, -1}; }
  constexpr bool accepts(std::size_t n) const {
    return n >= static_cast<std::size_t>(min) && (max < 0 || n <= static_cast<std::size_t>(max));
  }
};

/// Everything canopy knows about one primitive. Null rule = not provided (yet).
struct PrimitiveInfo {
  std::string_view name;
  Arity arity{};
  const std::type_info* params_type = nullptr;
  AbstractEvalFn abstract_eval = nullptr;
  /// Its kernels by device kind; read them with kernel(kind).
  KernelTable kernels;
  JvpFn jvp = nullptr;
  TransposeFn transpose = nullptr;
  BatchFn batch = nullptr;
  bool linear = false;             ///< jvp is the primitive itself; needs transpose
  bool nondifferentiable = false;  ///< integer/boolean outputs: zero tangents, no jvp needed
  /// Linear in each operand separately (dot_general, conv_general_dilated: JAX's bilinear
  /// primitives): its results are sums of products, like a linear primitive's sums of operands.
  bool bilinear = false;
  /// Its floating results are sums of its floating operands (or of their products) in an order
  /// that may differ between devices, without the primitive being linear in every operand (as a
  /// scatter-add whose duplicates a device sums in an order of its own would be; canopy's GPU
  /// scatter-add sums them in the CPU's order). Linear and bilinear primitives sum too; GPU
  /// verification gives all of them a tolerance for the order of summation.
  bool accumulates = false;
  /// Its GPU kernel may compute its sums by a fast transform rather than term by term: cuDNN's
  /// convolution engines include such algorithms (FFT, Winograd), and not every one carries a
  /// numerical note saying so (on an H200, the filter-gradient engine 17 of cuDNN 9 gave
  /// -1.8e-12 for an element all of whose products are zero). An element's rounding then comes
  /// from the terms of the elements it is transformed with as well as from its own, and GPU
  /// verification allows each element of a call cuDNN ran an error in proportion to the result's
  /// largest sum (kFastTransformAllowance in verify_against_cpu.cpp).
  bool fast_transform_sums = false;
  /// For a primitive some of whose results accumulate so (a fused kernel's sums beside its
  /// elementwise results): whether result `output` does, for these params. Null: as `accumulates`.
  bool (*accumulating_output)(const ParamsRef& params, std::size_t output) = nullptr;
  /// Its CPU kernel rounds an intermediate to the result's dtype that its GPU kernel keeps in f32
  /// (a matmul or convolution rounded before its bias is added, where cuBLASLt and cuDNN add the
  /// bias to the f32 sum and round once): GPU verification allows that rounding in 16-bit dtypes.
  bool rounds_intermediate = false;
  /// For primitives that multiply floats (dot_general, conv_general_dilated): the precision a GPU
  /// computes their f32 products at for these params (null: exact). GPU verification allows TF32's
  /// rounding where it is Precision::high. From `P::product_precision(params)`.
  Precision (*product_precision)(const ParamsRef& params) = nullptr;
  /// Its evaluation is the same code on every device (control flow and calls run sub-programs,
  /// whose steps run their own kernels; a callback runs host code): no backend kernel of its own,
  /// its `evaluate` fills every slot of `kernels`, and GPU verification leaves it to its steps.
  bool device_neutral = false;
  Lowering lowering{};             ///< how jit lowers it (elementwise kinds fuse)
  /// Whether `lowering` holds for these params (null: always); else the primitive runs its own
  /// kernel (random_uniform01 fuses in the partitionable layout only). From `P::lowers(params)`.
  bool (*lowering_applies)(const ParamsRef& params) = nullptr;
  /// For reductions and row steps (lowering kinds `reduction`, `log_softmax`): the axes the params
  /// reduce over, as given (negative ones count from the end). From `P::reduction_axes(params)`.
  std::vector<int> (*reduction_axes)(const ParamsRef& params) = nullptr;
  /// Set for collectives (their Params have `axis_name`): what vmap does on the axis they name.
  CollectiveFn collective = nullptr;
  /// Set for collectives: the axis name their params hold.
  std::string_view (*collective_axis)(const ParamsRef& params) = nullptr;
  std::vector<ErasedSample> (*samples)() = nullptr;
  /// `k=v k2=v2`, as a jaxpr prints between the primitive's brackets (empty for no params).
  std::string (*params_to_string)(const ParamsRef& params) = nullptr;
  /// Equality and hash of two params of this primitive (CSE, jit cache keys).
  bool (*params_equal)(const ParamsRef& a, const ParamsRef& b) = nullptr;
  std::uint64_t (*params_hash)(const ParamsRef& params) = nullptr;
  /// An owned copy of the params, for traces that record applications (linearize, jit).
  std::shared_ptr<const void> (*clone_params)(const ParamsRef& params) = nullptr;
  /// For the fuzzers: an owned copy of the params with fields perturbed by `draw` (null where
  /// the params are not walkable field by field: those holding functions or Arrays).
  std::shared_ptr<const void> (*perturbed_params)(const ParamsRef& params, detail::ParamDraw& draw) = nullptr;
  /// Set for call primitives (jit_call): the program the params hold. Traces apply such a
  /// primitive through Trace::process_call.
  const struct Program* (*call_program)(const ParamsRef& params) = nullptr;
  /// For call primitives: how many leading inputs are residuals of a call linear in the rest
  /// (jvp derives such calls); linearize records those instead of splitting them again.
  int (*num_fixed_inputs)(const ParamsRef& params) = nullptr;
  /// The sub-programs the params hold, by name (`jaxpr`, `body_jaxpr`...), for printing.
  std::vector<std::pair<std::string, const struct Program*>> (*sub_programs)(const ParamsRef& params) = nullptr;

  /// Its kernel for devices of `kind`: the table's slot, filled from the backends' registrations
  /// on first use; null where no backend gives one.
  KernelFn kernel(Device::Kind kind) const;
};

namespace detail {

/// A kernel a backend gives one primitive: the primitive's name, the kernel, and the Params type
/// the kernel reads (null: it reads none), checked against the primitive's when first resolved.
struct KernelEntry {
  std::string_view primitive;
  KernelFn kernel = nullptr;
  const std::type_info* params = nullptr;
};
/// Adds a backend's kernels for devices of `kind` (from its folder, at static initialisation);
/// the first kernel registered for a primitive and kind is its kernel. Returns true so it can
/// initialise a namespace-scope constant.
bool register_kernels(Device::Kind kind, std::initializer_list<KernelEntry> entries);
/// A backend's kernels for the elementwise lowering kinds (unary, binary, select, convert): the
/// kernel for `lowering` (it reads the operands and results, not the params), or null.
using ElementwiseKernels = KernelFn (*)(Lowering lowering);
/// Declares the backend of devices of `kind` built, with its elementwise kernels: every
/// primitive whose lowering is an elementwise kind gets its kernel there without a registration.
bool register_backend(Device::Kind kind, ElementwiseKernels elementwise);
/// Whether a backend for devices of `kind` is built into this program.
bool backend_registered(Device::Kind kind);
/// Names that kernels were registered under but no registered primitive has (a misspelt name).
std::vector<std::string> kernels_without_primitive();
/// Primitives whose kernel for a kind was registered twice with different functions (the first is kept).
std::vector<std::string> duplicate_kernels();
/// Fills p's slot for `kind` from the registrations (PrimitiveInfo::kernel's slow path).
KernelFn resolve_kernel(const PrimitiveInfo& p, Device::Kind kind);

/// Applies `p`: finds the innermost trace among the inputs and the current trace, and asks it.
Arrays bind(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params);

// make_info's steps: each fills the fields of one group of P's rules, in the order make_info
// calls them. They are templates in this header (every primitive file instantiates them once),
// kept small so the one table stays readable field by field.
namespace make_info_steps {

// Name, arity, Params type and the output avals, every one checked here, once, so that no trace
// or kernel sees a shape whose element or byte count overflows int64 (ShapeError naming the primitive).
template <class P>
void add_signature(PrimitiveInfo& i) {
  using Params = typename P::Params;
  i.name = P::name;
  static_assert(requires { Arity{P::arity}; },
                "canopy: a primitive declares how many inputs it takes: static constexpr Arity arity = ...");
  i.arity = P::arity;
  i.params_type = &typeid(Params);
  i.abstract_eval = [](std::span<const Aval> avals, const ParamsRef& params) -> std::vector<Aval> {
    std::vector<Aval> outs;
    if constexpr (std::is_same_v<decltype(P::abstract_eval(avals, params.get<Params>())), Aval>)
      outs.push_back(P::abstract_eval(avals, params.get<Params>()));
    else
      outs = P::abstract_eval(avals, params.get<Params>());
    for (const Aval& a : outs) check_aval(P::name, a);
    return outs;
  };
}

// A primitive's own evaluation, if it has one, fills every kernel slot; the backends fill the rest.
template <class P>
void add_evaluation(PrimitiveInfo& i) {
  using Params = typename P::Params;
  static_assert(!requires { &P::eval_cpu; } && !requires { &P::eval_cuda; },
                "canopy: kernels live in transforms/src/backends/<kind>/ (detail::register_kernel); a primitive "
                "file holds rules and, where it runs the same code on every device, `evaluate`");
  if constexpr (requires { &P::evaluate; }) {
    const KernelFn evaluate = [](std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
      P::evaluate(in, out, params.get<Params>());
    };
    for (std::size_t k = 0; k < Device::kinds; ++k) i.kernels.set(static_cast<Device::Kind>(k), evaluate);
  }
  if constexpr (requires(const Params& p) { Precision{P::product_precision(p)}; })
    i.product_precision = [](const ParamsRef& params) { return P::product_precision(params.get<Params>()); };
  if constexpr (requires { bool{P::device_neutral}; }) {
    static_assert(!P::device_neutral || requires { &P::evaluate; },
                  "canopy: a device-neutral primitive gives its one evaluation as `evaluate`");
    i.device_neutral = P::device_neutral;
  }
}

// jvp, transpose and the flags autodiff and GPU verification read. A rule is either a stock
// erased rule (taken as is) or a typed static function (wrapped to read the erased params).
template <class P>
void add_differentiation(PrimitiveInfo& i) {
  using Params = typename P::Params;
  if constexpr (requires { JvpFn{P::jvp}; }) i.jvp = P::jvp;
  else if constexpr (requires { &P::jvp; })
    i.jvp = [](std::span<const Array> primals, std::span<const Array> tangents, const ParamsRef& params) {
      return P::jvp(primals, tangents, params.get<Params>());
    };
  if constexpr (requires { TransposeFn{P::transpose}; }) i.transpose = P::transpose;
  else if constexpr (requires { &P::transpose; })
    i.transpose = [](std::span<const Array> cotangent, std::span<const Array> primals, std::span<const Aval> avals,
                     const ParamsRef& params) { return P::transpose(cotangent, primals, avals, params.get<Params>()); };
  if constexpr (requires { bool{P::linear}; }) i.linear = P::linear;
  if constexpr (requires { bool{P::nondifferentiable}; }) i.nondifferentiable = P::nondifferentiable;
  if constexpr (requires { bool{P::bilinear}; }) i.bilinear = P::bilinear;
  if constexpr (requires { bool{P::accumulates}; }) i.accumulates = P::accumulates;
  if constexpr (requires { bool{P::fast_transform_sums}; }) i.fast_transform_sums = P::fast_transform_sums;
}

// The batching rule, and for collectives what vmap does on the axis they name.
template <class P>
void add_batching(PrimitiveInfo& i) {
  using Params = typename P::Params;
  if constexpr (requires { BatchFn{P::batch}; }) i.batch = P::batch;
  else if constexpr (requires { &P::batch; })
    i.batch = [](std::span<const Array> primals, std::span<const int> bdims, const ParamsRef& params) {
      return P::batch(primals, bdims, params.get<Params>());
    };
  if constexpr (requires { &P::collective; }) {
    i.collective = [](std::span<const Array> x, std::span<const int> bdims, std::int64_t n, const ParamsRef& params) {
      return P::collective(x, bdims, n, params.get<Params>());
    };
    i.collective_axis = [](const ParamsRef& params) { return std::string_view(params.get<Params>().axis_name); };
  }
}

// How jit lowers it: the lowering kind, when it applies, and the axes a reduction reduces.
template <class P>
void add_lowering(PrimitiveInfo& i) {
  using Params = typename P::Params;
  if constexpr (requires { Lowering{P::lowering}; }) i.lowering = P::lowering;
  if constexpr (requires(const Params& p) { bool{P::lowers(p)}; })
    i.lowering_applies = [](const ParamsRef& params) { return P::lowers(params.get<Params>()); };
  if constexpr (requires(const Params& p) { std::vector<int>{P::reduction_axes(p)}; })
    i.reduction_axes = [](const ParamsRef& params) { return P::reduction_axes(params.get<Params>()); };
}

// The generic tests' samples, with their params erased (owned).
template <class P>
void add_samples(PrimitiveInfo& i) {
  using Params = typename P::Params;
  i.samples = []() {
    std::vector<ErasedSample> out;
    for (auto& s : P::samples())
      out.push_back({std::move(s.inputs), std::make_shared<Params>(s.params), &typeid(Params), std::move(s.note)});
    return out;
  };
}

// Copying, printing, comparing and hashing the params: P's own statics where it gives them,
// else derived field by field (then the fuzzers can perturb them too).
template <class P>
void add_params_operations(PrimitiveInfo& i) {
  using Params = typename P::Params;
  i.clone_params = [](const ParamsRef& params) -> std::shared_ptr<const void> {
    return std::make_shared<Params>(params.get<Params>());
  };
  if constexpr (requires(const Params& p) { P::params_string(p); })
    i.params_to_string = [](const ParamsRef& params) { return P::params_string(params.get<Params>()); };
  else
    i.params_to_string = [](const ParamsRef& params) { return params_text(params.get<Params>()); };
  if constexpr (requires(const Params& p) { P::params_equal(p, p); P::params_hash(p); }) {
    i.params_equal = [](const ParamsRef& a, const ParamsRef& b) { return P::params_equal(a.get<Params>(), b.get<Params>()); };
    i.params_hash = [](const ParamsRef& params) { return std::uint64_t(P::params_hash(params.get<Params>())); };
  } else {
    static_assert(param_walkable<Params>(),
                  "canopy: this primitive's Params hold a type that cannot be compared, hashed and printed field by "
                  "field; give the primitive params_equal, params_hash and params_string statics");
    i.params_equal = [](const ParamsRef& a, const ParamsRef& b) { return param_equal(a.get<Params>(), b.get<Params>()); };
    i.params_hash = [](const ParamsRef& params) { return param_hash(params.get<Params>()); };
    i.perturbed_params = [](const ParamsRef& params, ParamDraw& draw) -> std::shared_ptr<const void> {
      auto copy = std::make_shared<Params>(params.get<Params>());
      param_perturb(*copy, draw);
      return copy;
    };
  }
}

// The programs the params hold: a call primitive's one program (which traces apply through
// Trace::process_call) and its fixed inputs, or control flow's named sub-programs, for printing.
template <class P>
void add_sub_programs(PrimitiveInfo& i) {
  using Params = typename P::Params;
  if constexpr (requires(const Params& p) { P::program_of(p); }) {
    i.call_program = [](const ParamsRef& params) -> const Program* { return &P::program_of(params.get<Params>()); };
    i.sub_programs = [](const ParamsRef& params) -> std::vector<std::pair<std::string, const Program*>> {
      return {{"jaxpr", &P::program_of(params.get<Params>())}};
    };
  }
  if constexpr (requires(const Params& p) { p.num_fixed; })
    i.num_fixed_inputs = [](const ParamsRef& params) { return static_cast<int>(params.get<Params>().num_fixed); };
  if constexpr (requires(const Params& p) { P::programs_of(p); })
    i.sub_programs = [](const ParamsRef& params) -> std::vector<std::pair<std::string, const Program*>> {
      return P::programs_of(params.get<Params>());
    };
}

}  // namespace make_info_steps

/// Builds the erased rules table of primitive struct P (see transforms/README.md "Adding a primitive").
/// Optional members: jvp, transpose, batch (typed static functions, or a stock erased rule),
/// `linear`, `nondifferentiable`, `params_string(const Params&)`, and `evaluate` for a primitive
/// that runs the same code on every device (it fills every kernel slot; other primitives get
/// their kernels from the backends).
template <class P>
PrimitiveInfo make_info() {
  PrimitiveInfo i;
  make_info_steps::add_signature<P>(i);
  make_info_steps::add_evaluation<P>(i);
  make_info_steps::add_differentiation<P>(i);
  make_info_steps::add_batching<P>(i);
  make_info_steps::add_lowering<P>(i);
  make_info_steps::add_samples<P>(i);
  make_info_steps::add_params_operations<P>(i);
  make_info_steps::add_sub_programs<P>(i);
  return i;
}

/// The typed kernel `Kernel` as an entry for `primitive`, whose Params it reads.
template <class Params, void (*Kernel)(std::span<const Array>, std::span<Array>, const Params&)>
KernelEntry typed_kernel(std::string_view primitive) {
  return {primitive,
          [](std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
            Kernel(in, out, params.get<Params>());
          },
          &typeid(Params)};
}

/// The rules table of P, built once.
template <class P>
const PrimitiveInfo& info_of() {
  static const PrimitiveInfo info = make_info<P>();
  return info;
}

}  // namespace detail

inline KernelFn PrimitiveInfo::kernel(Device::Kind kind) const {
  if (KernelFn k = kernels.get(kind)) [[likely]]
    return k;
  return detail::resolve_kernel(*this, kind);
}

/// Applies primitive P to `in` with `params`; all outputs.
template <class P>
Arrays bind(std::span<const Array> in, const typename P::Params& params = {}) {
  return detail::bind(detail::info_of<P>(), in, ParamsRef{&params, &typeid(typename P::Params)});
}
/// Applies a single-output primitive P.
template <class P>
Array bind1(std::initializer_list<Array> in, const typename P::Params& params = {}) {
  return std::move(bind<P>(std::span<const Array>(in.begin(), in.size()), params)[0]);
}

}  // namespace canopy

/// Registers primitive struct P (in the current namespace) at static-initialisation time.
#define CANOPY_REGISTER_PRIMITIVE(P) \
  [[maybe_unused]] static const bool canopy_registered_##P = ::canopy::detail::register_primitive(::canopy::detail::info_of<P>())
