// Soak test (`make soak`, not in CI): training steps from several threads for minutes, with shapes
// drawn at random every step, while the resident set size is sampled. It checks that memory stays
// bounded: after warm-up, RSS may grow only by what the caching allocator's cache grew (bounded by
// CANOPY_ALLOCATOR_CACHE_MB) plus a small slack, so a leak of a few KB per step over ~10^5 steps
// fails it. Usage: soak [seconds = 600] [threads = 4]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/buffer.hpp>
#include <canopy/train.hpp>

using namespace canopy;

namespace {

struct Mlp {
  Array w1, b1, w2, b2;
};
struct Batch {
  Array x, y;
};

Array loss(const Mlp& p, const Batch& b) {
  const Array h = nn::relu(matmul(b.x, p.w1) + p.b1);
  const Array logits = matmul(h, p.w2) + p.b2;
  return -mean(sum(nn::log_softmax(logits) * b.y, -1));
}

Mlp init(const Array& key, std::int64_t in, std::int64_t hidden, std::int64_t classes) {
  const Array k = random::split(key, 2);
  return {random::normal(k[0], {in, hidden}) * 0.1f, zeros({hidden}), random::normal(k[1], {hidden, classes}) * 0.1f,
          zeros({classes})};
}

Batch batch(const Array& key, std::int64_t n, std::int64_t in, std::int64_t classes) {
  const Array k = random::split(key, 2);
  return {random::normal(k[0], {n, in}), one_hot(random::randint(k[1], {n}, 0, static_cast<int>(classes)), classes)};
}

double rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1 << 20);
}

std::atomic<long> steps{0};
std::atomic<bool> stop{false};

// One worker: eager value_and_grad + SGD, a jitted step (its cache bounded at 8 shape
// combinations, so eviction runs), and per-example gradients under vmap, on random shapes.
void work(int seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  auto pick = [&](std::initializer_list<std::int64_t> xs) { return *(xs.begin() + rng() % xs.size()); };
  auto jitted = jit([](const Mlp& p, const Batch& b) { return value_and_grad(loss)(p, b); }, cache_capacity(8));
  Array key = random::key(static_cast<std::uint32_t>(seed));
  while (!stop.load(std::memory_order_relaxed)) {
    const std::int64_t n = pick({1, 7, 32, 64}), in = pick({8, 16, 33, 64}), hidden = pick({16, 32, 48}), classes = 10;
    const Array k = random::split(key, 3);
    key = k[0];
    Mlp p = init(k[1], in, hidden, classes);
    const Batch b = batch(k[2], n, in, classes);
    switch (rng() % 3) {
      case 0: {
        auto [l, g] = value_and_grad(loss)(p, b);
        p = tree_map([](const Array& w, const Array& d) { return w - d * 0.1f; }, p, g);
        break;
      }
      case 1: {
        auto [l, g] = jitted(p, b);
        p = tree_map([](const Array& w, const Array& d) { return w - d * 0.1f; }, p, g);
        break;
      }
      default: {
        auto per_example = vmap([&p](const Batch& e) { return grad(loss)(p, e); })(
            Batch{reshape(b.x, {n, 1, in}), reshape(b.y, {n, 1, classes})});
        (void)per_example;
      }
    }
    (void)sum(p.w1).item<float>();  // waits for the step, as a training loop reading its loss does
    steps.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 600;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  const double sample_every = std::max(1.0, seconds / 60);
  std::printf("soak: %d threads for %.0f s, shapes drawn per step; RSS sampled every %.0f s\n", threads, seconds,
              sample_every);
  std::printf("%8s %10s %10s %12s %12s\n", "t_s", "steps", "rss_MiB", "cached_MiB", "live_MiB");
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(work, i + 1);
  const auto t0 = std::chrono::steady_clock::now();
  struct Sample {
    double t, rss, cached;
  };
  std::vector<Sample> samples;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::duration<double>(sample_every));
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto a = kernels::allocator_stats();
    samples.push_back({t, rss_mb(), static_cast<double>(a.cached_bytes) / (1 << 20)});
    std::printf("%8.0f %10ld %10.1f %12.1f %12.1f\n", t, steps.load(), samples.back().rss, samples.back().cached,
                static_cast<double>(a.live_bytes) / (1 << 20));
    std::fflush(stdout);
    if (t >= seconds) break;
  }
  stop = true;
  for (auto& t : pool) t.join();

  // Warm-up is the first fifth: caches (the allocator's, oneDNN's primitives, jit's) fill there.
  const Sample& warm = *std::find_if(samples.begin(), samples.end(), [&](const Sample& s) { return s.t >= seconds / 5; });
  const Sample& last = samples.back();
  double max_rss = 0;
  for (const Sample& s : samples) max_rss = std::max(max_rss, s.rss);
  const double growth = last.rss - warm.rss, cache_growth = std::max(0.0, last.cached - warm.cached);
  const double slack = 64;
  std::printf("soak: %ld steps; RSS %.1f MiB after warm-up (t=%.0f s), %.1f MiB at the end, peak %.1f MiB; "
              "growth %.1f MiB against an allowance of %.1f MiB (cache growth %.1f + slack %.0f)\n",
              steps.load(), warm.rss, warm.t, last.rss, max_rss, growth, cache_growth + slack, cache_growth, slack);
  if (growth > cache_growth + slack) {
    std::printf("soak: FAILED: memory grew beyond the allocator's cache\n");
    return 1;
  }
  std::printf("soak: OK\n");
  return 0;
}
