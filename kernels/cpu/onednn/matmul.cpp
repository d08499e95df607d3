// dot_general's f32 kernel: a oneDNN matmul primitive created once per (batch, m, k, n, layout,
// epilogue) and reused from the LRU cache; memory objects wrap the arrays' buffers (no copies).
// jit's epilogue fusion hands the elementwise steps that follow a matmul to oneDNN as post-ops,
// applied to each result while it is still in registers.
#include <atomic>
#include <string_view>

#include "engine.hpp"

namespace canopy::kernels::cpu::onednn {
namespace {

using Step = EpilogueStep;

std::atomic<bool>& post_ops_flag() {
  static std::atomic<bool> on{true};
  return on;
}

struct MatmulKey {
  std::int64_t batch, m, k, n, trans_a, trans_b;  // int64 flags: no padding bytes in the hashed key
  EpilogueKey epilogue;
};

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
constexpr auto f32 = dnnl::memory::data_type::f32;

struct Prepared {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c;
  std::vector<dnnl::memory::desc> operands;  ///< per binary step of its post-ops
  bool post_ops = false;                     ///< built with the epilogue (else: passes after it)
};

dnnl::algorithm binary_alg(Step::Op op) {
  switch (op) {
    case Step::Op::add: return dnnl::algorithm::binary_add;
    case Step::Op::sub: return dnnl::algorithm::binary_sub;
    case Step::Op::mul: return dnnl::algorithm::binary_mul;
    default: return dnnl::algorithm::binary_div;
  }
}

}  // namespace

dnnl::post_ops post_ops_of(std::span<const Step> steps, const dnnl::memory::desc& full, const dnnl::memory::desc& row,
                           const dnnl::memory::desc& scalar, std::vector<dnnl::memory::desc>& operands) {
  dnnl::post_ops po;
  for (const Step& s : steps) {
    switch (s.op) {
      case Step::Op::add: case Step::Op::sub: case Step::Op::mul: case Step::Op::div: {
        if (s.operand == Step::Operand::destination) {  // v + dst or v - dst, dst read in place
          po.append_sum(s.op == Step::Op::sub ? -1.f : 1.f);
          operands.emplace_back();
          break;
        }
        const dnnl::memory::desc& d = s.operand == Step::Operand::full ? full : s.operand == Step::Operand::row ? row : scalar;
        po.append_binary(binary_alg(s.op), d);
        operands.push_back(d);
        break;
      }
      // -1 * v + (-0): -0 for v = +0, as negation gives (a +0 offset would make it +0).
      case Step::Op::neg: po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, -1.f, -0.f); break;
      case Step::Op::tanh: po.append_eltwise(1.f, dnnl::algorithm::eltwise_tanh, 0.f, 0.f); break;
    }
  }
  return po;
}

/// The epilogue as passes over the rows x n results after a plain matmul (where oneDNN built no
/// post-ops), each step the eager kernel of its primitive, in place.
void epilogue_passes(float* c, std::int64_t rows, std::int64_t n, std::span<const Step> steps,
                     std::span<const float* const> operands) {
  const Shape shape{rows, n}, row{n}, one{};
  std::size_t next = 0;
  for (const Step& s : steps) {
    if (s.operand != Step::Operand::none) {
      const float* o = operands[next++];
      const Shape& o_shape = s.operand == Step::Operand::row ? row : s.operand == Step::Operand::scalar ? one : shape;
      const BinaryOp op = s.op == Step::Op::add   ? BinaryOp::add
                          : s.op == Step::Op::sub ? BinaryOp::sub
                          : s.op == Step::Op::mul ? BinaryOp::mul
                                                  : BinaryOp::div;
      binary(op, DType::f32, c, shape, o, o_shape, c, shape);
      continue;
    }
    const UnaryOp op = s.op == Step::Op::neg ? UnaryOp::neg : UnaryOp::tanh;
    unary(op, DType::f32, c, c, rows * n);
  }
}

EpilogueKey epilogue_key(std::string_view primitive, std::span<const Step> steps) {
  if (steps.size() > kMaxEpilogueSteps)
    detail::raise<UnimplementedRule>(primitive, "epilogue", "", "has more than kMaxEpilogueSteps steps");
  EpilogueKey key;
  key.num_steps = static_cast<std::int64_t>(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i)
    key.steps[i] = static_cast<std::int64_t>(steps[i].op) << 8 | static_cast<std::int64_t>(steps[i].operand);
  return key;
}

void add_post_op_operands(std::unordered_map<int, dnnl::memory>& args, std::span<const Step> steps,
                          std::span<const dnnl::memory::desc> descs, std::span<const float* const> operands) {
  std::size_t next = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].operand == Step::Operand::none) continue;
    if (steps[i].operand != Step::Operand::destination)  // the sum post-op reads DST
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1,
                   dnnl::memory(descs[next], engine(), const_cast<float*>(operands[next])));
    ++next;
  }
}

void matmul_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
                std::int64_t n, bool trans_a, bool trans_b, std::span<const Step> epilogue,
                std::span<const float* const> operands) {
  // Primitives stay on the thread that created them (oneDNN's library scratchpad is shared).
  thread_local LruCache<MatmulKey, Prepared> cache;
  // With post-ops off, the plain matmul's entry serves, and the steps run as passes after it.
  const std::span<const Step> post = post_ops_flag().load(std::memory_order_relaxed) ? epilogue : std::span<const Step>{};
  const MatmulKey key{batch, m, k, n, trans_a, trans_b, epilogue_key("matmul", post)};
  guarded("matmul", [&] {
    auto& p = cache.get_or_emplace(key, [&] {
      // A transposed operand is described by its strides (format tags ba / acb): oneDNN reads it
      // in place, so x^T @ g and g @ w^T in a backward pass copy nothing.
      const bool b1 = batch == 1;
      auto desc = [&](std::int64_t rows, std::int64_t cols, bool transposed) {
        const tag t = b1 ? (transposed ? tag::ba : tag::ab) : (transposed ? tag::acb : tag::abc);
        return dnnl::memory::desc(b1 ? dims{rows, cols} : dims{batch, rows, cols}, f32, t);
      };
      dnnl::memory::desc ad = desc(m, k, trans_a), bd = desc(k, n, trans_b), cd = desc(m, n, false);
      if (!post.empty()) {
        try {
          std::vector<dnnl::memory::desc> ods;
          dnnl::primitive_attr attr;
          const dnnl::memory::desc row(b1 ? dims{1, n} : dims{1, 1, n}, f32, b1 ? tag::ab : tag::abc);
          const dnnl::memory::desc one(b1 ? dims{1, 1} : dims{1, 1, 1}, f32, b1 ? tag::ab : tag::abc);
          attr.set_post_ops(post_ops_of(post, cd, row, one, ods));
          dnnl::matmul::primitive_desc pd({ad, bd, cd}, attr, engine());
          return Prepared{dnnl::matmul(pd), ad, bd, cd, std::move(ods), true};
        } catch (const dnnl::error&) {
          // unimplemented for this combination: the plain matmul, then the steps as passes
        }
      }
      dnnl::matmul::primitive_desc pd({ad, bd, cd}, engine());
      return Prepared{dnnl::matmul(pd), ad, bd, cd, {}, false};
    });
    auto& eng = engine();
    dnnl::memory am(p.a, eng, const_cast<float*>(a)), bm(p.b, eng, const_cast<float*>(b)), cm(p.c, eng, c);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
    const bool passes = !epilogue.empty() && !p.post_ops;
    if (p.post_ops) add_post_op_operands(args, epilogue, p.operands, operands);
    // Run as passes, a destination operand is read after the matmul has overwritten it: its
    // values are kept first.
    std::vector<float> kept;
    std::vector<const float*> pass_operands;
    if (passes) {
      pass_operands.assign(operands.begin(), operands.end());
      std::size_t next = 0;
      for (const Step& s : epilogue) {
        if (s.operand == Step::Operand::none) continue;
        if (s.operand == Step::Operand::destination) {
          kept.assign(c, c + batch * m * n);
          pass_operands[next] = kept.data();
        }
        ++next;
      }
    }
    p.prim.execute(stream(), args);
    stream().wait();
    if (passes) epilogue_passes(c, batch * m, n, epilogue, pass_operands);
  });
}

}  // namespace canopy::kernels::cpu::onednn

namespace canopy::kernels::cpu {
void set_epilogue_post_ops(bool on) { onednn::post_ops_flag() = on; }
bool epilogue_post_ops() { return onednn::post_ops_flag(); }
}  // namespace canopy::kernels::cpu
