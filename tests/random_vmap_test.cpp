// canopy::random under vmap: a batch of keys u32[n, 2] mapped through any sampler draws, key by
// key, exactly what that key draws alone (JAX's guarantee for vmap over keys), whichever axis
// carries the batch and whether the keys or the other arguments are the batched ones.
#include <vector>

#include <doctest/doctest.h>

#include <canopy/random.hpp>
#include <canopy/transforms.hpp>

using namespace canopy;
namespace rnd = canopy::random;

namespace {

Array key_row(const Array& keys, std::int64_t i) { return take(keys, scalar(static_cast<int>(i)), 0); }

// got[i] must equal want(key i) bit for bit (compared through f64, exact for every dtype here).
template <class Sampler>
void check_per_key(const Array& got, const Array& keys, Sampler want) {
  const std::int64_t n = keys.shape()[0];
  REQUIRE(got.shape()[0] == n);
  for (std::int64_t i = 0; i < n; ++i) {
    const Array one = want(key_row(keys, i));
    const Array mine = take(got, scalar(static_cast<int>(i)), 0);
    CHECK(to_string(mine.aval()) == to_string(one.aval()));
    CHECK(mine.astype(DType::f64).to_vector<double>() == one.astype(DType::f64).to_vector<double>());
  }
}

}  // namespace

TEST_CASE("vmap of each sampler over a batch of keys equals the sampler applied key by key") {
  const Array keys = rnd::split(rnd::key(0), 4);
  auto uniform = [](const Array& k) { return rnd::uniform(k, {3, 2}); };
  auto normal = [](const Array& k) { return rnd::normal(k, {5}); };
  auto bits = [](const Array& k) { return rnd::bits(k, {7}); };
  auto bern = [](const Array& k) { return rnd::bernoulli(k, 0.3, Shape{6}); };
  auto randint = [](const Array& k) { return rnd::randint(k, {5}, -3, 11); };
  auto gumbel = [](const Array& k) { return rnd::gumbel(k, {4}, DType::f64); };
  auto expo = [](const Array& k) { return rnd::exponential(k, {4}); };
  auto tnorm = [](const Array& k) { return rnd::truncated_normal(k, -1.0, 2.0, Shape{5}); };
  auto perm = [](const Array& k) { return rnd::permutation(k, 6); };
  auto cat = [](const Array& k) { return rnd::categorical(k, array({0.1f, 2.0f, -1.0f}), -1, Shape{8}); };
  auto choice = [](const Array& k) { return rnd::choice(k, 10, {3}, false); };
  check_per_key(vmap(uniform)(keys), keys, uniform);
  check_per_key(vmap(normal)(keys), keys, normal);
  check_per_key(vmap(bits)(keys), keys, bits);
  check_per_key(vmap(bern)(keys), keys, bern);
  check_per_key(vmap(randint)(keys), keys, randint);
  check_per_key(vmap(gumbel)(keys), keys, gumbel);
  check_per_key(vmap(expo)(keys), keys, expo);
  check_per_key(vmap(tnorm)(keys), keys, tnorm);
  check_per_key(vmap(perm)(keys), keys, perm);
  check_per_key(vmap(cat)(keys), keys, cat);
  check_per_key(vmap(choice)(keys), keys, choice);
}

TEST_CASE("split and fold_in under vmap equal the per-key results, in both layouts") {
  const Array keys = rnd::split(rnd::key(42), 3);
  for (auto layout : {rnd::Layout::partitionable, rnd::Layout::legacy}) {
    rnd::LayoutScope scope(layout);
    auto split3 = [](const Array& k) { return rnd::split(k, 3); };
    check_per_key(vmap(split3)(keys), keys, split3);
    auto fold = [](const Array& k) { return rnd::fold_in(k, 12345); };
    check_per_key(vmap(fold)(keys), keys, fold);
    auto step = [](const Array& k) { return rnd::step_key(k, 7, 1, 2); };
    check_per_key(vmap(step)(keys), keys, step);
  }
}

TEST_CASE("a batch of keys along axis 1 and a batched fold_in message both map correctly") {
  const Array keys = rnd::split(rnd::key(1), 5);  // u32[5, 2]
  auto uniform = [](const Array& k) { return rnd::uniform(k, {2}); };
  check_per_key(vmap(uniform, in_axes(1))(transpose(keys, {1, 0})), keys, uniform);

  // One key, a batch of messages: per-example keys the JAXline way (fold in the example index).
  const Array base = rnd::key(7);
  const Array steps = arange(4).astype(DType::u32);
  Array folded = vmap([&](const Array& s) { return rnd::fold_in(base, s); })(steps);
  for (int i = 0; i < 4; ++i)
    CHECK(take(folded, scalar(i), 0).to_vector<std::uint32_t>() == rnd::fold_in(base, i).to_vector<std::uint32_t>());
}

TEST_CASE("dropout with per-example keys under vmap composes with grad") {
  // The per-example dropout idiom: vmap over (keys, examples) of a loss whose mask comes from
  // the example's key; its gradient is the mask scaled by 1/keep, example by example.
  const Array keys = rnd::split(rnd::key(3), 4);
  const Array x = ones({4, 6});
  const double keep = 0.75;
  auto loss = [&](const Array& k, const Array& xi) {
    const Array mask = rnd::bernoulli(k, keep, xi.shape());
    return sum(where(mask, xi / keep, zeros_like(xi)));
  };
  Array g = vmap(grad(loss, argnums<1>))(keys, x);
  for (int i = 0; i < 4; ++i) {
    const Array mask = rnd::bernoulli(key_row(keys, i), keep, Shape{6});
    const Array want = where(mask, full({6}, 1.0 / keep, DType::f32), zeros({6}));
    CHECK(take(g, scalar(i), 0).to_vector<float>() == want.to_vector<float>());
  }
}

TEST_CASE("a sampler that needs concrete probabilities says so under vmap") {
  const Array keys = rnd::split(rnd::key(0), 2);
  const Array p = array({{0.2f, 0.8f}, {0.5f, 0.5f}});
  auto f = [](const Array& k, const Array& pi) { return rnd::choice(k, 2, {3}, true, pi); };
  CHECK_THROWS_AS(vmap(f)(keys, p), Error);
}
