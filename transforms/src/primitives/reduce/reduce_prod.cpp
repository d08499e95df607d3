// Everything canopy knows about `reduce_prod` (product over axes): rules, kernel, samples, op.
// The kernel moves the reduced axes last (a kernel-level copy) and multiplies each row in order.
#include <algorithm>

#include "../rules.hpp"
#include "../common.hpp"

namespace canopy::prim {
struct ReduceProd {
  static constexpr std::string_view name = "reduce_prod";
  struct Params {
    std::vector<int> axes;
  };
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::reduce_aval(name, avals[0], params.axes, detail::kFloat | detail::kInt);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params& params) {
    const Array& x = in[0];
    const int r = static_cast<int>(x.ndim());
    std::vector<bool> red(x.ndim(), false);
    for (int a : params.axes) red[static_cast<std::size_t>(a < 0 ? a + r : a)] = true;
    std::vector<int> perm;
    for (int i = 0; i < r; ++i) if (!red[static_cast<std::size_t>(i)]) perm.push_back(i);
    for (int i = 0; i < r; ++i) if (red[static_cast<std::size_t>(i)]) perm.push_back(i);
    const Array xt = detail::permuted_copy(x, perm);
    const std::int64_t rows = out[0].size(), len = rows == 0 ? 0 : x.size() / rows;
    visit_dtype(x.dtype(), [&]<class T>(std::type_identity<T>) {
      if constexpr (!std::is_same_v<T, bool>) {
        using C = std::conditional_t<std::is_same_v<T, bf16>, float, T>;
        using W = typename std::conditional_t<std::is_integral_v<C>, std::make_unsigned<C>,
                                              std::type_identity<C>>::type;  // integers wrap
        const T* p = static_cast<const T*>(detail::cdata(xt));
        T* o = static_cast<T*>(detail::mutable_data(out[0]));
        for (std::int64_t i = 0; i < rows; ++i) {
          W acc = W(1);
          for (std::int64_t j = 0; j < len; ++j) acc = static_cast<W>(acc * static_cast<W>(static_cast<C>(p[i * len + j])));
          o[i] = T(static_cast<C>(acc));
        }
      }
    });
  }
  // No vectorised rule yet: one application per example (see batch_by_loop).
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_by_loop<ReduceProd>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() { return detail::reduce_samples<Params>(detail::kFloat | detail::kInt); }
};
CANOPY_REGISTER_PRIMITIVE(ReduceProd);
}  // namespace canopy::prim

namespace canopy {
Array reduce_prod(const Array& x, const std::vector<int>& axes) {
  if (axes.empty()) return x;
  return bind1<prim::ReduceProd>({x}, {axes});
}
}  // namespace canopy
