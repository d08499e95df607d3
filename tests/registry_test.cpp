// Walks the primitive registry: every primitive has abstract_eval, a CPU kernel and samples;
// each sample runs eagerly and agrees with abstract_eval; no rule is missing except where JAX
// itself defines none.
#include <iterator>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/core/autodiff.hpp>
#include <canopy/core/batching.hpp>
#include <canopy/core/primitive.hpp>

using namespace canopy;

TEST_CASE("registry: the primitives are registered once, sorted, findable by name") {
  auto all = registered_primitives();
  CHECK(all.size() >= 40);
  for (std::size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1]->name < all[i]->name);
  REQUIRE(find_primitive("dot_general") != nullptr);
  CHECK(find_primitive("dot_general")->name == "dot_general");
  CHECK(find_primitive("no_such_primitive") == nullptr);
}

TEST_CASE("registry: every primitive has a kernel on every backend built, device-neutral ones their one evaluation") {
  // Both backends are built into every program (cuda/ stands in with "unavailable" without the
  // CUDA toolkit), so a primitive without a kernel for one of them fails here, on the host.
  const Device::Kind kinds[] = {Device::Kind::cpu, Device::Kind::cuda};
  static_assert(std::size(kinds) == Device::kinds);
  for (Device::Kind k : kinds) CHECK(detail::backend_registered(k));
  std::string missing;
  for (const PrimitiveInfo* p : registered_primitives()) {
    CAPTURE(std::string(p->name));
    for (Device::Kind k : kinds)
      if (detail::backend_registered(k) && !p->kernel(k))
        missing += std::string(missing.empty() ? "" : ", ") + std::string(p->name) + (k == Device::Kind::cpu ? " (cpu)" : " (cuda)");
    if (p->device_neutral)
      for (Device::Kind k : kinds) CHECK(bool(p->kernel(k) == p->kernel(Device::Kind::cpu)));
  }
  CHECK_MESSAGE(missing.empty(), "no kernel: ", missing);
  const std::vector<std::string> orphans = detail::kernels_without_primitive();
  std::string orphan_text;
  for (const std::string& o : orphans) orphan_text += o + " ";
  CHECK_MESSAGE(orphans.empty(), "kernels registered for no primitive: ", orphan_text);
  std::string duplicate_text;
  for (const std::string& d : detail::duplicate_kernels()) duplicate_text += d + " ";
  CHECK_MESSAGE(duplicate_text.empty(), "kernels registered twice: ", duplicate_text);
}

TEST_CASE("registry: an elementwise primitive's kernels come from its lowering on every backend") {
  const PrimitiveInfo* add = find_primitive("add");
  const PrimitiveInfo* sub = find_primitive("sub");
  REQUIRE(add != nullptr);
  REQUIRE(sub != nullptr);
  CHECK(add->lowering.kind == Lowering::Kind::binary);
  for (Device::Kind k : {Device::Kind::cpu, Device::Kind::cuda}) {
    REQUIRE(bool(add->kernel(k)));
    CHECK(bool(add->kernel(k) != sub->kernel(k)));  // one kernel per op
    CHECK(bool(add->kernel(k) != add->kernel(k == Device::Kind::cpu ? Device::Kind::cuda : Device::Kind::cpu)));
  }
  // A rules table made elsewhere (as jit's passes make theirs) with the same lowering resolves to
  // the same kernels, and one whose lowering is not elementwise gets none without a registration.
  PrimitiveInfo copy;
  copy.name = "not_registered_add";
  copy.lowering = add->lowering;
  CHECK(bool(copy.kernel(Device::Kind::cpu) == add->kernel(Device::Kind::cpu)));
  PrimitiveInfo opaque;
  opaque.name = "not_registered_opaque";
  CHECK(!opaque.kernel(Device::Kind::cpu));
}

TEST_CASE("registry: every primitive's samples run eagerly and agree with abstract_eval") {
  for (const PrimitiveInfo* p : registered_primitives()) {
    CAPTURE(std::string(p->name));
    if (p->collective) continue;  // runs only inside a vmap naming its axis: vmap_collectives_test
    REQUIRE(bool(p->abstract_eval));
    REQUIRE(bool(p->kernel(Device::Kind::cpu)));
    REQUIRE(bool(p->samples));
    auto samples = p->samples();
    CHECK(!samples.empty());
    for (const ErasedSample& s : samples) {
      CAPTURE(s.note);
      std::vector<Aval> in;
      for (const Array& x : s.inputs) in.push_back(x.aval());
      std::vector<Aval> want = p->abstract_eval(in, s.ref());
      Arrays got = detail::bind(*p, s.inputs, s.ref());
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(to_string(got[i].aval()) == to_string(want[i]));
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i].weak_type() == want[i].weak_type);
    }
  }
}

TEST_CASE("registry: every primitive has its jvp, transpose and batching rules, and printable params") {
  // JAX defines no derivative for nextafter or pure_callback either (a callback gets its
  // derivative from custom_vjp/custom_jvp around it).
  const std::set<std::string> no_jvp_in_jax = {"nextafter", "pure_callback"};
  std::string missing;
  for (const PrimitiveInfo* p : registered_primitives()) {
    CHECK(bool(p->params_to_string));
    CHECK(bool(p->params_equal));
    CHECK(bool(p->params_hash));
    for (const ErasedSample& smp : p->samples()) {  // a recorded copy equals the original (CSE, cache keys)
      auto copy = p->clone_params(smp.ref());
      ParamsRef c{copy.get(), p->params_type};
      CHECK(p->params_equal(c, smp.ref()));
      CHECK(p->params_hash(c) == p->params_hash(smp.ref()));
      CHECK(p->params_to_string(c) == p->params_to_string(smp.ref()));
    }
    std::string m;
    if (!p->jvp && !p->nondifferentiable && !p->linear && !no_jvp_in_jax.count(std::string(p->name))) m += " jvp";
    if (p->linear && !p->transpose) m += " transpose";
    // A primitive without inputs (iota) is never batched, and collectives have their own rule.
    bool has_inputs = false;
    for (const ErasedSample& smp : p->samples()) has_inputs |= !smp.inputs.empty();
    if (!p->batch && has_inputs && !p->collective) m += " batch";
    if (!m.empty()) missing += std::string(p->name) + ":" + m + "\n";
  }
  CHECK_MESSAGE(missing.empty(), "primitives lacking rules:\n" << missing);
}

TEST_CASE("registry: every primitive's arity accepts its samples and bind rejects one input too many or too few") {
  for (const PrimitiveInfo* p : registered_primitives()) {
    CAPTURE(std::string(p->name));
    for (const ErasedSample& s : p->samples()) {
      CHECK(p->arity.accepts(s.inputs.size()));
      Arrays more = s.inputs;
      more.push_back(more.empty() ? scalar(1.0f) : more.back());
      if (!p->arity.accepts(more.size())) {
        const std::string want = std::string(p->name) + ": inputs are " + std::to_string(more.size()) +
                                 " arrays; the primitive takes";
        CHECK_THROWS_WITH_AS(detail::bind(*p, more, s.ref()), doctest::Contains(want.c_str()), TypeError);
      }
      if (!s.inputs.empty() && !p->arity.accepts(s.inputs.size() - 1)) {
        const Arrays fewer(s.inputs.begin(), s.inputs.end() - 1);
        CHECK_THROWS_AS(detail::bind(*p, fewer, s.ref()), TypeError);
      }
    }
  }
}

namespace {
// Sends every integer field of a primitive's params to INT_MAX (or its type's maximum).
struct ToMaximum final : detail::ParamDraw {
  std::uint32_t draw(std::uint32_t n) override { return n == 3 ? 1 : n == 10 ? 5 : 0; }
};
}  // namespace

TEST_CASE("registry: under vmap, jvp and vjp an application its shape rule rejects raises that rule's error") {
  // vmap's rules shift axes by one: argmax with axis INT_MAX must be a ShapeError before that
  // (found by the transform fuzzer as an int overflow).
  const PrimitiveInfo* argmax_p = find_primitive("argmax");
  const ErasedSample s = argmax_p->samples()[0];
  ToMaximum to_max;
  const auto bad = argmax_p->perturbed_params(s.ref(), to_max);
  const ParamsRef bad_ref{bad.get(), argmax_p->params_type};
  CHECK(argmax_p->params_to_string(bad_ref).find("2147483647") != std::string::npos);
  const Array xs = stack({s.inputs[0], s.inputs[0]}, 0);
  detail::VmapSpec spec;
  spec.in_axes = {0};
  CHECK_THROWS_AS(detail::vmap_flat([&](const Arrays& x) { return detail::bind(*argmax_p, x, bad_ref); }, {xs}, spec),
                  ShapeError);
  // jvp/vjp rules written with public ops would promote a bool operand of rem; the primitive itself
  // takes one float dtype.
  const PrimitiveInfo* rem_p = find_primitive("rem");
  const ErasedSample r = rem_p->samples()[0];
  const Array flags = ones({3}, DType::bool_), y = ones({3});
  auto with_bool = [&](const Arrays& x) { return detail::bind(*rem_p, Arrays{flags, x[0]}, r.ref()); };
  CHECK_THROWS_WITH_AS(detail::jvp_flat(with_bool, {y}, {y}), doctest::Contains("rem: operand"), TypeError);
  CHECK_THROWS_AS(detail::vjp_flat(with_bool, {y}), TypeError);
}

TEST_CASE("registry: a second primitive under a registered name is an error; the same rules again are not") {
  const PrimitiveInfo* exp_rules = find_primitive("exp");
  REQUIRE(exp_rules != nullptr);
  CHECK(detail::register_primitive(*exp_rules));  // the same rules: the same primitive
  static PrimitiveInfo impostor;
  impostor.name = "exp";
  CHECK_THROWS_WITH_AS(detail::register_primitive(impostor),
                       doctest::Contains("register_primitive: primitive (exp) is registered twice"), TypeError);
  CHECK(find_primitive("exp") == exp_rules);
}
