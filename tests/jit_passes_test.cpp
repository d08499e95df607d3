// jit's pass pipeline, pass by pass: each pass run alone on a staged program changes what it
// should, leaves the values as they were and a program the verifier accepts; the verifier rejects
// broken programs with a ProgramError naming the pass; the pipeline runs each device's passes in
// order and prints the program after each under dump_passes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/primitive.hpp>
#include <canopy/kernels/cuda.hpp>
#include <canopy/nn.hpp>
#include <canopy/random.hpp>

#include "../random/src/internal.hpp"
#include "../transforms/src/core/ir/verify.hpp"
#include "../transforms/src/jit/passes/passes.hpp"
#include "../transforms/src/jit/passes/pipeline.hpp"
#include "helpers/text_count.hpp"

namespace {
using namespace canopy;

Array uniform_array(std::uint32_t seed, const Shape& s) { return random::uniform(random::key(seed), s, DType::f32, -1, 1); }

/// f recorded as it is, nothing simplified.
Program staged(const detail::FlatFn& f, const Arrays& args) {
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  return detail::stage(f, avals);
}

/// `p` after the pass `name` alone, which the verifier must accept.
Program after(const Program& p, std::string_view name) {
  Program q = p;
  detail::pass_named(name).run(q);
  detail::verify_program(q, std::string("after ") + std::string(name));
  return q;
}

int equations_of(const Program& p, std::string_view prim) {
  int n = 0;
  for (const Eqn& e : p.eqns) n += e.prim->name == prim;
  return n;
}

/// Both programs give the same bits on `args` (every equation bound eagerly).
void check_same_values(const Program& a, const Program& b, const Arrays& args, float tolerance = 0) {
  const Arrays want = detail::eval_program(a, args), got = detail::eval_program(b, args);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    REQUIRE(to_string(got[i].aval()) == to_string(want[i].aval()));
    if (tolerance == 0) CHECK(std::memcmp(got[i].raw_data(), want[i].raw_data(), static_cast<std::size_t>(want[i].size()) * itemsize(want[i].dtype())) == 0);
    else CHECK(max(abs(got[i] - want[i])).item<float>() <= tolerance);
  }
}

/// Runs pass `name` alone on f staged on `args`: the program after it has the given number of
/// equations of each primitive named, passes the verifier and gives f's values. Returns both.
std::pair<Program, Program> check_pass(std::string_view name, const detail::FlatFn& f, const Arrays& args,
                                       const std::vector<std::pair<std::string_view, int>>& counts, float tolerance = 0) {
  Program p = staged(f, args), q = after(p, name);
  for (const auto& [prim, n] : counts) {
    CAPTURE(prim);
    CHECK(equations_of(q, prim) == n);
  }
  check_same_values(p, q, args, tolerance);
  return {std::move(p), std::move(q)};
}

/// Turns jit's verifier on or off for a scope.
struct VerifyPasses {
  bool was = detail::verify_passes();
  explicit VerifyPasses(bool on) { detail::set_verify_passes(on); }
  ~VerifyPasses() { detail::set_verify_passes(was); }
};

}  // namespace

TEST_CASE("passes: fold_constants evaluates small equations on constants now") {
  const Array c = array({1.f, 2.f, 3.f});
  auto f = [&](const Arrays& x) { return Arrays{x[0] + c * 2.f}; };
  const auto [p, q] = check_pass("fold_constants", f, {uniform_array(1, {3})}, {{"mul", 0}, {"add", 1}});
  CHECK(equations_of(p, "mul") == 1);
  CHECK(q.eqns.back().in[1].is_constant());
}

TEST_CASE("passes: split_keys_as_fold_ins takes each key kept from a split as a fold_in, bit for bit") {
  // split2's two keys and one of three: each slice of a split becomes a fold_in with the key's
  // index (the partitionable layout's identity), and the split is left unread.
  auto f = [](const Arrays& x) {
    const auto [key, sub] = random::split2(x[0]);
    const Array third = random::split(x[0], 3)[2];
    return Arrays{key, sub, third, random::split(x[0], 3)};  // the last: a whole split stays one
  };
  const Arrays args = {random::key(7)};
  const auto [p, q] = check_pass("split_keys_as_fold_ins", f, args, {{"random_fold_in", 3}, {"random_split", 3}});
  CHECK(equations_of(p, "random_fold_in") == 0);
  const Program r = after(after(after(q, "combine_reshapes_and_broadcasts"), "eliminate_common_subexpressions"),
                          "eliminate_dead_code");
  CAPTURE(to_string(r));
  CHECK(equations_of(r, "random_split") == 1);
  CHECK(equations_of(r, "slice") == 0);
  CHECK(equations_of(r, "reshape") == 0);
  check_same_values(p, r, args);
  // A split into a grid of keys: the one at [1, 2] of a [2, 3] split is new key 5 (row-major).
  auto grid = [](const Arrays& x) {
    const Array keys = detail::random_split_p(x[0], {2, 3}, random::Layout::partitionable);  // [2, 3, 2]
    return Arrays{slice(keys, {1, 2, 0}, {2, 3, 2})};
  };
  const auto [grid_staged, grid_folded] = check_pass("split_keys_as_fold_ins", grid, args, {{"random_fold_in", 1}});
  CHECK(to_string(grid_folded).find("random_fold_in a 5:u32[]") != std::string::npos);
  // Under the legacy layout a new key's words come from two hashes: nothing is replaced.
  const random::LayoutScope legacy(random::Layout::legacy);
  auto g = [](const Arrays& x) { return Arrays{random::split2(x[0]).first}; };
  check_pass("split_keys_as_fold_ins", g, args, {{"random_fold_in", 0}, {"random_split", 1}, {"slice", 2}});
  // Nor is a slice that takes more than one key, or part of one, or a split of a batch of keys.
  auto h = [](const Arrays& x) {
    const Array two = slice(random::split(x[0], 4), {1, 0}, {3, 2});
    const Array word = slice(random::split(x[0], 2), {0, 1}, {1, 2});
    const Array batch = slice(random::split(random::split(x[0], 2), 2), {0, 0, 0}, {1, 1, 2});
    return Arrays{two, word, batch};
  };
  {
    const random::LayoutScope partitionable(random::Layout::partitionable);
    check_pass("split_keys_as_fold_ins", h, args, {{"random_fold_in", 0}, {"slice", 3}});
  }
}

TEST_CASE("passes: combine_reshapes_and_broadcasts makes chains of shape changes one") {
  auto f = [](const Arrays& x) {
    const Array cube = broadcast_in_dim(broadcast_in_dim(x[0], {2, 3}, {1}), {4, 2, 3}, {1, 2});  // [3] -> [2,3] -> [4,2,3]
    const Array column = broadcast_in_dim(broadcast_in_dim(x[1], {5}, {}), {5, 3}, {0});        // [] -> [5] -> [5,3]
    const Array stretched = broadcast_in_dim(broadcast_in_dim(x[2], {1, 3}, {1}), {6, 1, 3}, {0, 2});  // [1] -> [1,3] -> [6,1,3]
    const Array back = reshape(reshape(x[0], {3, 1}), {3});  // the operand itself
    const Array flat = reshape(reshape(x[3], {6}), {3, 2});
    return Arrays{cube, column, stretched, back * 2.f, flat};
  };
  const Arrays args = {uniform_array(1, {3}), uniform_array(2, {}), uniform_array(3, {1}), uniform_array(4, {2, 3})};
  const auto [p, q] = check_pass("combine_reshapes_and_broadcasts", f, args, {{"broadcast_in_dim", 6}, {"reshape", 3}});
  const Program r = after(q, "eliminate_dead_code");
  CHECK(equations_of(r, "broadcast_in_dim") == 3);
  CHECK(equations_of(r, "reshape") == 1);
  CAPTURE(to_string(r));
  // What is left reads the program's inputs: one equation from each operand to each result.
  auto is_input = [&](const Atom& a) {
    return a.is_var() && std::find(r.in_vars.begin(), r.in_vars.end(), a.index) != r.in_vars.end();
  };
  for (const Eqn& e : r.eqns)
    if (e.prim->name == "broadcast_in_dim" || e.prim->name == "reshape") CHECK(is_input(e.in[0]));
  CHECK(equations_of(r, "mul") == 1);
  check_same_values(p, r, args);
}

TEST_CASE("passes: eliminate_common_subexpressions merges equal equations") {
  auto f = [](const Arrays& x) { return Arrays{sin(x[0]) * sin(x[0])}; };
  const auto [p, q] = check_pass("eliminate_common_subexpressions", f, {uniform_array(1, {4})}, {{"sin", 1}});
  CHECK(equations_of(p, "sin") == 2);
  CHECK(q.eqns.back().in[0] == q.eqns.back().in[1]);
}

TEST_CASE("passes: eliminate_dead_code drops what no output reads") {
  auto f = [](const Arrays& x) {
    [[maybe_unused]] Array unused = exp(x[0]) + 1.f;
    return Arrays{x[0] * 2.f};
  };
  const auto [p, q] = check_pass("eliminate_dead_code", f, {uniform_array(1, {4})}, {{"exp", 0}, {"add", 0}, {"mul", 1}});
  CHECK(equations_of(p, "exp") == 1);
}

TEST_CASE("passes: fuse_epilogues folds a matmul's tail into one dot_general_epilogue") {
  const Arrays args = {uniform_array(1, {16, 8}), uniform_array(2, {8, 12}), uniform_array(3, {12})};
  auto f = [](const Arrays& a) { return Arrays{tanh(matmul(a[0], a[1]) * 1.5f + a[2])}; };
  // oneDNN's tanh: a few ulp.
  check_pass("fuse_epilogues", f, args, {{"dot_general_epilogue", 1}, {"dot_general", 0}, {"tanh", 0}}, 1e-5f);
}

TEST_CASE("passes: fuse_elementwise makes one fused_elementwise of a chain") {
  auto f = [](const Arrays& x) { return Arrays{tanh(x[0] * 1.5f - 0.25f) * 0.75f}; };
  const auto [p, q] = check_pass("fuse_elementwise", f, {uniform_array(1, {64})}, {{"fused_elementwise", 1}, {"tanh", 0}}, 1e-6f);
  CHECK(q.eqns.size() < p.eqns.size());
}

TEST_CASE("passes: fuse_epilogues_for_cuda makes x@w+b one dot_general_bias") {
  const Arrays args = {uniform_array(1, {6, 4}), uniform_array(2, {4, 5}), uniform_array(3, {5})};
  auto f = [](const Arrays& a) { return Arrays{matmul(a[0], a[1]) + a[2]}; };
  check_pass("fuse_epilogues_for_cuda", f, args, {{"dot_general_bias", 1}, {"dot_general", 0}, {"add", 0}});
}

TEST_CASE("passes: fuse_bias_gradients_for_cuda makes x^T@g and sum(g, 0) one dot_general_bias_grad") {
  const Arrays args = {uniform_array(1, {6, 4}), uniform_array(2, {6, 5})};
  auto f = [](const Arrays& a) {
    const Array g = a[1] * 2.f;
    return Arrays{dot_general(a[0], g, {{0}, {0}, {}, {}}), sum(g, 0)};
  };
  check_pass("fuse_bias_gradients_for_cuda", f, args, {{"dot_general_bias_grad", 1}, {"dot_general", 0}, {"reduce_sum", 0}});
}

TEST_CASE("passes: fuse_conv_bias_for_cuda makes conv(x, w) + b one conv_general_dilated_bias") {
  const Arrays args = {uniform_array(1, {2, 6, 6, 3}), uniform_array(2, {3, 3, 3, 4}), uniform_array(3, {4})};
  auto f = [](const Arrays& a) {
    return Arrays{conv_general_dilated(a[0], a[1], {1, 1}, "SAME", {}, {}, {"NHWC", "HWIO", "NHWC"}) + a[2]};
  };
  check_pass("fuse_conv_bias_for_cuda", f, args, {{"conv_general_dilated_bias", 1}, {"conv_general_dilated", 0}, {"add", 0}});
}

TEST_CASE("passes: fuse_elementwise_for_cuda fuses plain elementwise chains only") {
  const Arrays args = {uniform_array(1, {64})};
  // Where the build has no CUDA backend no fused kernel can run on a GPU, so the pass leaves the
  // program as it is (its check of kernels::cuda::fused_supported).
  const int fused = kernels::cuda::built() ? 1 : 0;
  check_pass("fuse_elementwise_for_cuda", [](const Arrays& x) { return Arrays{exp(x[0] * 2.f) + 1.f}; }, args,
             {{"fused_elementwise", fused}, {"exp", 1 - fused}}, 1e-6f);
  // A lone op is its own kernel, unless it runs over 2^18 elements or more (a relu over a CNN's
  // activations): then the generated kernel's 128-bit loads and stores pay for it.
  auto relu = [](const Arrays& x) { return Arrays{nn::relu(x[0])}; };
  check_pass("fuse_elementwise_for_cuda", relu, args, {{"fused_elementwise", 0}, {"max", 1}});
  check_pass("fuse_elementwise_for_cuda", relu, {uniform_array(8, {512, 511})}, {{"fused_elementwise", 0}, {"max", 1}});
  check_pass("fuse_elementwise_for_cuda", relu, {uniform_array(8, {512, 512})}, {{"fused_elementwise", fused}, {"max", 1 - fused}});
  check_pass("fuse_elementwise", relu, {uniform_array(8, {512, 512})}, {{"fused_elementwise", 0}, {"max", 1}});
  // A sum of everything stays its own equation on a GPU (the CPU's fused kernel takes it); sums
  // along rows of at most kernels::kMaxGpuRow elements are the GPU kernel's outputs too.
  auto summed = [](const Arrays& x) { return Arrays{sum(exp(x[0]) * 2.f)}; };
  check_pass("fuse_elementwise_for_cuda", summed, args, {{"fused_elementwise", fused}, {"reduce_sum", 1}}, 1e-6f);
  check_pass("fuse_elementwise", summed, args, {{"fused_elementwise", 1}, {"reduce_sum", 0}}, 1e-4f);
  auto row_sums = [](const Arrays& x) {
    const Array e = exp(x[0]) * 2.f;
    return Arrays{e, sum(e, 1)};
  };
  check_pass("fuse_elementwise_for_cuda", row_sums, {uniform_array(4, {16, 8})},
             {{"fused_elementwise", fused}, {"reduce_sum", 1 - fused}}, 1e-5f);
  const Shape long_rows = {2, kernels::kMaxGpuRow + 1};
  check_pass("fuse_elementwise_for_cuda", row_sums, {uniform_array(5, long_rows)}, {{"fused_elementwise", fused}, {"reduce_sum", 1}},
             1e-5f);
  // So is log_softmax along such rows (a step of the kernel, a thread per row).
  auto log_probs = [](const Arrays& x) {
    const Array l = nn::log_softmax(x[0] * 2.f);
    return Arrays{l * x[1], sum(exp(l), 1)};
  };
  const Arrays logits = {uniform_array(6, {16, 8}), uniform_array(7, {16, 8})};
  check_pass("fuse_elementwise_for_cuda", log_probs, logits, {{"fused_elementwise", fused}, {"log_softmax", 1 - fused}}, 1e-5f);
  const Arrays wide = {uniform_array(6, long_rows), uniform_array(7, long_rows)};
  check_pass("fuse_elementwise_for_cuda", log_probs, wide, {{"log_softmax", 1}}, 1e-5f);
  // A row sum later steps read along its rows (a softmax cross-entropy's gradient) is a step of
  // the kernel: the chain, the sum and its readers are one kernel.
  auto ce_grad = [](const Arrays& x) {
    const Array scaled = x[1] * -0.5f;
    return Arrays{exp(nn::log_softmax(x[0])) * broadcast_in_dim(sum(scaled, 1), {16, 8}, {0}) + scaled};
  };
  check_pass("fuse_elementwise_for_cuda", ce_grad, logits,
             {{"fused_elementwise", fused}, {"reduce_sum", 1 - fused}, {"log_softmax", 1 - fused}}, 1e-5f);
  // Sums no member reads are outputs alone (no passes over the rows for them): nine in one
  // kernel, where at most 8 row steps fit. A reader of a sum that cannot read it along its rows
  // (another shape) still fuses with what follows it.
  auto nine = [](const Arrays& x) {
    const Array e = exp(x[0]);
    Arrays out;
    for (int k = 1; k <= 9; ++k) out.push_back(sum(e * static_cast<float>(k), 1));
    return out;
  };
  check_pass("fuse_elementwise_for_cuda", nine, {uniform_array(11, {16, 8})},
             {{"fused_elementwise", fused}, {"reduce_sum", 9 * (1 - fused)}}, 1e-4f);
  auto log_sum = [](const Arrays& x) { return Arrays{log(sum(exp(x[0]), 1)) * 2.f + 1.f}; };
  check_pass("fuse_elementwise_for_cuda", log_sum, {uniform_array(12, {16, 8})},
             {{"fused_elementwise", 2 * fused}, {"log", 1 - fused}}, 1e-5f);
  // i32 labels against class indices (one_hot) are compared in a GPU program's kernel, by value.
  auto labelled_loss = [](const Arrays& x) { return Arrays{sum(nn::log_softmax(x[0]) * one_hot(x[1], 8), 1)}; };
  const Arrays labelled = {uniform_array(9, {16, 8}), random::randint(random::key(10), {16}, 0, 8)};
  check_pass("fuse_elementwise_for_cuda", labelled_loss, labelled, {{"fused_elementwise", fused}, {"eq", 1 - fused}}, 1e-5f);
  check_pass("fuse_elementwise", labelled_loss, labelled, {{"eq", 1}}, 1e-5f);
  // One read as a row instead (a square's sums by numpy broadcasting) is read from outside.
  auto as_row = [](const Arrays& x) {
    const Array e = exp(x[0]);
    return Arrays{e * sum(e, 1)};
  };
  check_pass("fuse_elementwise_for_cuda", as_row, {uniform_array(8, {8, 8})}, {{"fused_elementwise", fused}, {"mul", 1}}, 1e-5f);
  // A value per row broadcast along it (a softmax cross-entropy's backward pass, a norm's
  // statistics) is a column input of the GPU's fused kernel, by broadcast_in_dim or by numpy
  // broadcasting; the CPU's fused kernels take rows and scalars only.
  const Arrays rows = {uniform_array(2, {16, 8}), uniform_array(3, {16})};
  auto columns = [](const Arrays& x) {
    return Arrays{exp(x[0]) * broadcast_in_dim(x[1], {16, 8}, {0}) + x[1].reshape({16, 1})};
  };
  const auto [p, q] = check_pass("fuse_elementwise_for_cuda", columns, rows,
                                 {{"fused_elementwise", fused}, {"broadcast_in_dim", 1 - fused}, {"exp", 1 - fused}}, 1e-6f);
  CAPTURE(to_string(q));
  if (fused) CHECK(count(to_string(q), "fused_elementwise[ops=broadcast_in_dim,exp,mul,add]") == 1);
  check_pass("fuse_elementwise", columns, rows, {{"broadcast_in_dim", 1}}, 1e-6f);
}

TEST_CASE("passes: fuse_segments_for_cuda runs one fused program over several leaves as one equation") {
  // x[2k] - x[2k+1] * 0.1 for leaves of several shapes, a tanh between them, a sum that reads the
  // first update, then two more updates: the first three of 4 elements or more become one equation,
  // the [2] leaf (no 4-element vectors) stays alone, and the updates after the sum, which must run
  // after it, become a second one.
  const std::vector<Shape> shapes = {{8, 4}, {4}, {5, 3}, {2}, {6}, {3, 3}, {9}};
  Arrays args;
  for (std::size_t k = 0; k < shapes.size(); ++k)
    for (std::uint32_t j = 0; j < 2; ++j) args.push_back(uniform_array(static_cast<std::uint32_t>(10 * k + j), shapes[k]));
  auto update = [](const Arrays& x, std::size_t k) { return x[2 * k] - x[2 * k + 1] * 0.1f; };
  auto f = [&](const Arrays& x) {
    const Array r0 = update(x, 0), r1 = update(x, 1), r2 = tanh(x[4]), r3 = update(x, 3), r4 = update(x, 4);
    const Array r5 = sum(r0);
    return Arrays{r0, r1, r2, r3, r4, r5, update(x, 5), update(x, 6)};
  };
  if (!kernels::cuda::built()) return;  // nothing is fused for a GPU without a CUDA backend
  const Program p = staged(f, args), fused = after(after(p, "combine_reshapes_and_broadcasts"), "fuse_elementwise_for_cuda");
  REQUIRE(equations_of(fused, "fused_elementwise") == 6);
  const Program q = after(fused, "fuse_segments_for_cuda");
  CAPTURE(to_string(q));
  CHECK(equations_of(q, "fused_elementwise_segments") == 2);
  CHECK(equations_of(q, "fused_elementwise") == 1);  // the [2] leaf's
  CHECK(count(to_string(q), "fused_elementwise_segments[ops=3x(mul,sub)]") == 1);
  CHECK(count(to_string(q), "fused_elementwise_segments[ops=2x(mul,sub)]") == 1);
  check_same_values(p, q, args);
  // Only a segment's own operands may give their bytes to its results: the other segments run at
  // the same time.
  const auto merged = std::find_if(q.eqns.begin(), q.eqns.end(), [](const Eqn& e) { return e.prim->name == "fused_elementwise_segments"; });
  REQUIRE(merged != q.eqns.end());
  REQUIRE(merged->in.size() % 3 == 0);
  const std::size_t per = merged->in.size() / 3;  // each segment's operands
  const std::vector<std::size_t> first_segment = {0}, second_segment = {per}, both = {0, per};
  CHECK(detail::segments_write_in_place(*merged->prim, merged->params_ref(), first_segment, 0));
  CHECK_FALSE(detail::segments_write_in_place(*merged->prim, merged->params_ref(), second_segment, 0));
  CHECK(detail::segments_write_in_place(*merged->prim, merged->params_ref(), second_segment, 1));
  CHECK_FALSE(detail::segments_write_in_place(*merged->prim, merged->params_ref(), both, 1));
  // At most kernels::fused_segments_capacity segments an equation: 18 leaves, 16 and 2.
  const std::size_t leaves = 18;
  Arrays many;
  for (std::size_t k = 0; k < 2 * leaves; ++k) many.push_back(uniform_array(static_cast<std::uint32_t>(100 + k), {static_cast<std::int64_t>(4 + k / 2)}));
  auto g = [&](const Arrays& x) {
    Arrays out;
    for (std::size_t k = 0; k < leaves; ++k) out.push_back(update(x, k));
    return out;
  };
  const Program pm = staged(g, many), qm = after(after(pm, "fuse_elementwise_for_cuda"), "fuse_segments_for_cuda");
  CHECK(count(to_string(qm), "fused_elementwise_segments[ops=16x(mul,sub)]") == 1);
  CHECK(count(to_string(qm), "fused_elementwise_segments[ops=2x(mul,sub)]") == 1);
  check_same_values(pm, qm, many);
}

TEST_CASE("passes: fuse_scalars_for_cuda makes one-element steps of any dtype one equation") {
  // A step counter saturating at the int32 maximum (add, lt, select_n), converted to f32 for a
  // bias correction (pow, sub) that a full-size update reads: one equation before the update.
  // A second correction of that counter and another counter's increment, written after the
  // update, have their operands there before it: they join that equation. A loss of the update
  // (its sum, 6 elements, and scale) cannot run before the update: a second equation. Values
  // are the CPU's, bit for bit.
  const Arrays args = {scalar(std::int32_t{41}), uniform_array(1, {6}), scalar(std::int32_t{7})};
  auto f = [](const Arrays& x) {
    constexpr std::int32_t max = std::numeric_limits<std::int32_t>::max();
    const Array count = where(x[0] < max, x[0] + 1, scalar(max));
    const Array t = count.astype(DType::f32);
    const Array update = x[1] / (1.f - pow(scalar(0.9f), t));
    const Array second = 1.f - pow(scalar(0.999f), t), other = x[2] + 1;
    const Array loss = -(sum(update) / 6.f);
    return Arrays{count, update, second, other, loss, loss * 0.5f + 1.f};
  };
  const Program p = after(staged(f, args), "fold_constants"), q = after(p, "fuse_scalars_for_cuda");
  CAPTURE(to_string(q));
  CHECK(equations_of(q, "fused_scalars") == 2);
  CHECK(count(to_string(q), "fused_scalars[ops=add,lt,select_n,convert_element_type,pow,sub,pow,sub,add]") == 1);
  CHECK(count(to_string(q), "fused_scalars[ops=reduce_sum,div,neg,mul,add]") == 1);
  check_same_values(p, q, args);
  const auto at = [&](std::string_view prim) {
    return std::find_if(q.eqns.begin(), q.eqns.end(), [&](const Eqn& e) { return e.prim->name == prim; }) - q.eqns.begin();
  };
  CHECK(at("fused_scalars") < at("div"));
  // A result may take an input's bytes only where no later step reads that input: the counter
  // (input 0) is read by add and lt, so select_n's result (step 2) may take it, add's (step 0) not.
  const Eqn& first = q.eqns[static_cast<std::size_t>(at("fused_scalars"))];
  REQUIRE(first.in[0] == Atom::variable(p.in_vars[0]));
  const std::vector<std::size_t> counter = {0};
  CHECK_FALSE(detail::scalars_write_in_place(*first.prim, first.params_ref(), counter, 0));
  CHECK(detail::scalars_write_in_place(*first.prim, first.params_ref(), counter, 2));
  // A long chain is cut where a kernel's parameter (an address per input and per step) would
  // pass 4 KB.
  auto chain = [](const Arrays& x) {
    Array v = x[0];
    for (int i = 0; i < 300; ++i) v = v * 1.0001f + 0.5f;
    return Arrays{v};
  };
  const Arrays one = {scalar(0.25f)};
  const Program pc = after(staged(chain, one), "fold_constants"), qc = after(pc, "fuse_scalars_for_cuda");
  CHECK(equations_of(qc, "fused_scalars") == 4);  // 600 steps of 3 addresses at most each
  for (const Eqn& e : qc.eqns) CHECK(e.in.size() + e.out.size() <= 512);
  check_same_values(pc, qc, one);
  // Steps of a 16-bit float (no native C++ type) or of more than one element stay as they are.
  const Arrays halves = {scalar(1.5f).astype(DType::bf16), uniform_array(3, {2})};
  auto g = [](const Arrays& x) { return Arrays{x[0] * x[0] + x[0], x[1] * 2.f + 1.f}; };
  CHECK(equations_of(after(after(staged(g, halves), "fold_constants"), "fuse_scalars_for_cuda"), "fused_scalars") == 0);
}

TEST_CASE("passes: the pipeline lists each pass once, simplifications first, per device kind") {
  std::vector<std::string> names;
  bool lowering = false;
  for (const detail::Pass& pass : detail::passes()) {
    CHECK(std::count(names.begin(), names.end(), std::string(pass.name)) == 0);
    names.emplace_back(pass.name);
    CHECK(&detail::pass_named(pass.name) == &pass);
    if (pass.stage == detail::PassStage::lower) lowering = true;
    else CHECK_FALSE(lowering);  // no simplification after a lowering pass
    CHECK(pass.targets != 0);
  }
  CHECK(detail::pass_named("fuse_elementwise").targets == detail::target(Device::Kind::cpu));
  CHECK(detail::pass_named("fuse_elementwise_for_cuda").targets == detail::target(Device::Kind::cuda));
  CHECK_THROWS_WITH_AS(detail::pass_named("inline"), doctest::Contains("fold_constants"), ValueError);
}

TEST_CASE("passes: dump_passes prints the program after each pass of the device that compiles it") {
  std::vector<std::string> lines;
  set_log_handler([&](const std::string& m) { lines.push_back(m); });
  detail::set_dump_passes(true);
  auto f = [](const Array& x) { return tanh(x * 2.f) + 1.f; };
  const Lowered l = jit(f, jit_name("dumped")).lower(uniform_array(1, {8}));
  const std::size_t cpu_lines = lines.size();
  const std::string gpu = l.gpu_text();
  detail::set_dump_passes(false);
  set_log_handler({});
  std::vector<std::string> order;
  for (const std::string& m : lines) {
    CHECK(m.rfind("jit(dumped) after ", 0) == 0);
    CHECK(m.find(":\n{ lambda ") != std::string::npos);
    order.push_back(m.substr(18, m.find(':') - 18));
  }
  CHECK(order == std::vector<std::string>{"split_keys_as_fold_ins", "combine_reshapes_and_broadcasts", "fold_constants",
                                          "eliminate_common_subexpressions", "eliminate_dead_code", "fuse_epilogues", "fuse_elementwise", "fuse_epilogues_for_cuda",
                                          "fuse_bias_gradients_for_cuda", "fuse_conv_bias_for_cuda",
                                          "fuse_scalars_for_cuda", "fuse_elementwise_for_cuda", "fuse_segments_for_cuda"});
  CHECK(cpu_lines == 7);
  REQUIRE(lines.size() == 13);
  CHECK(lines[6].find("fused_elementwise") != std::string::npos);  // the program as it is then
  CHECK(lines[4].find("fused_elementwise") == std::string::npos);
  CHECK(lines.back().substr(lines.back().find('{')) == gpu);
}

TEST_CASE("verifier: accepts staged, differentiated, batched and control-flow programs") {
  const Arrays args = {uniform_array(1, {3})};
  auto f = [](const Array& x) {
    const Array looped = fori_loop(0, 3, [](const Array&, const Array& c) { return c * 2.f + 1.f; }, x);
    const Array doubled = while_loop([](const Array& c) { return sum(c) < 10.f; }, [](const Array& c) { return c * 2.f; },
                                     stop_gradient(x));
    return sum(cond(sum(x) > 0.f, [](const Array& c) { return sin(c); }, [](const Array& c) { return cos(c); }, looped)) +
           sum(doubled);
  };
  CHECK_NOTHROW(detail::verify_program(make_jaxpr(f)(args[0]), "staged"));
  CHECK_NOTHROW(detail::verify_program(make_jaxpr(grad(f))(args[0]), "grad"));
  CHECK_NOTHROW(detail::verify_program(make_jaxpr(vmap(f))(stack({args[0], args[0]}, 0)), "vmap"));
  CHECK(jit(grad(f))(args[0]).shape() == Shape{3});  // every pass of each compiled program verified
}

TEST_CASE("verifier: a variable read before its definition is a ProgramError naming the pass") {
  const Arrays args = {uniform_array(1, {3})};
  Program p = staged([](const Arrays& x) { return Arrays{exp(sin(x[0]))}; }, args);
  REQUIRE(p.eqns.size() == 2);
  std::swap(p.eqns[0], p.eqns[1]);  // exp now reads sin's result before sin runs
  CHECK_THROWS_WITH_AS(detail::verify_program(p, "after some_pass"),
                       doctest::Contains("verify_program: equation 0 (exp) (after some_pass) reads variable 1 before any "
                                         "input or equation defines it"),
                       ProgramError);
  // Defined twice: sin's result also an input.
  Program twice = staged([](const Arrays& x) { return Arrays{exp(sin(x[0]))}; }, args);
  twice.in_vars.push_back(twice.eqns[0].out[0]);
  CHECK_THROWS_WITH_AS(detail::verify_program(twice, "test"), doctest::Contains("a second time"), ProgramError);
}

TEST_CASE("verifier: results whose avals are not the primitive's abstract evaluation are a ProgramError") {
  const Arrays args = {uniform_array(1, {3})};
  Program p = staged([](const Arrays& x) { return Arrays{exp(sin(x[0]))}; }, args);
  p.var_avals[static_cast<std::size_t>(p.eqns[0].out[0])] = Aval{DType::f32, {4}};
  CHECK_THROWS_WITH_AS(detail::verify_program(p, "after some_pass"),
                       doctest::Contains("equation 0 `b:f32[4] = sin a` (after some_pass) has results (f32[4]) but sin of "
                                         "(f32[3]) gives (f32[3])"),
                       ProgramError);
  // An equation a pass made carries its own avals: fused_elementwise's are checked too.
  Program fused = after(staged([](const Arrays& x) { return Arrays{exp(x[0] * 2.f) + 1.f}; }, args), "fuse_elementwise");
  REQUIRE(equations_of(fused, "fused_elementwise") == 1);
  fused.var_avals[static_cast<std::size_t>(fused.eqns.back().out[0])].dtype = DType::i32;
  CHECK_THROWS_WITH_AS(detail::verify_program(fused, "test"), doctest::Contains("has results (i32[3]) but fused_elementwise"),
                       ProgramError);
  // Operands the primitive's rule rejects.
  Program bad = staged([](const Arrays& x) { return Arrays{x[0] + x[1]}; }, {args[0], args[0]});
  bad.var_avals[static_cast<std::size_t>(bad.in_vars[1])] = Aval{DType::f32, {5}};
  CHECK_THROWS_WITH_AS(detail::verify_program(bad, "test"), doctest::Contains("abstract evaluation rejects"), ProgramError);
}

TEST_CASE("verifier: an output nothing defines is a ProgramError") {
  const Arrays args = {uniform_array(1, {3})};
  Program p = staged([](const Arrays& x) { return Arrays{sin(x[0])}; }, args);
  p.outs[0] = Atom::variable(p.new_var(Aval{DType::f32, {3}}));
  CHECK_THROWS_WITH_AS(detail::verify_program(p, "after some_pass"),
                       doctest::Contains("output 0 (after some_pass) reads variable 2 before any input or equation defines it"),
                       ProgramError);
  Program wrong = staged([](const Arrays& x) { return Arrays{sin(x[0])}; }, args);
  wrong.out_avals[0] = Aval{DType::f32, {2}};
  CHECK_THROWS_WITH_AS(detail::verify_program(wrong, "test"), doctest::Contains("output 0 (test) is f32[3] but the program's out_avals say f32[2]"),
                       ProgramError);
}

TEST_CASE("verifier: jit checks the program it is given and a broken sub-program inside a call") {
  const Arrays args = {uniform_array(1, {3})};
  Program broken = staged([](const Arrays& x) { return Arrays{exp(sin(x[0]))}; }, args);
  broken.var_avals[static_cast<std::size_t>(broken.eqns[0].out[0])] = Aval{DType::f32, {4}};
  {
    VerifyPasses on(true);
    CHECK_THROWS_WITH_AS(Executable(broken, "inner"), doctest::Contains("(jit(inner) before split_keys_as_fold_ins)"), ProgramError);
  }
  std::shared_ptr<const Executable> inner;
  {
    VerifyPasses off(false);
    inner = std::make_shared<const Executable>(broken, "inner");
  }
  const Program outer = staged([&](const Arrays& x) { return detail::apply_executable(inner, x); }, args);
  REQUIRE(equations_of(outer, "jit_call") == 1);
  CHECK_THROWS_WITH_AS(detail::verify_program(outer, "outer"),
                       doctest::Contains("(outer, in jaxpr of equation 0 (jit_call)) has results (f32[4]) but sin"),
                       ProgramError);
}

TEST_CASE("passes: plan_buffers lets slots whose lives do not meet share bytes, and says which held them before") {
  // Slot 0 lives over steps 0-1, slot 1 over 1-2, slot 2 over 2-3 (of 100, 100 and 64 bytes):
  // 0 and 1 meet, 2 meets 1 but not 0, so 2 takes 0's place once 0 is dead. Slot 3 is not placed.
  const std::vector<std::int64_t> bytes = {100, 100, 64, 0};
  const std::vector<int> first = {0, 1, 2, 0}, last = {1, 2, 3, 3};
  const detail::BufferPlan plan = detail::plan_buffers(bytes, first, last);
  CHECK(plan.offset[0] == 0);
  CHECK(plan.offset[1] == 128);  // 64-byte aligned, after slot 0
  CHECK(plan.offset[2] == 0);
  CHECK(plan.offset[3] == -1);
  CHECK(plan.earlier[2] == std::vector<int>{0});
  CHECK(plan.earlier[1].empty());
  CHECK(plan.arena_bytes == 256);
  CHECK(plan.unplanned_bytes == 128 + 128 + 64);
}
