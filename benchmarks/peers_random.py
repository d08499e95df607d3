"""W6 peers: numpy's default_rng().random(2**24, dtype=float32) and torch.rand(2**24), GB/s of
output (4n/t), best of 20 after a warm-up. Run with OMP_NUM_THREADS=2 (torch reads it)."""
import time

N = 2 ** 24


def best(f, reps=20):
    f()
    t = min((lambda s: (f(), time.perf_counter() - s)[1])(time.perf_counter()) for _ in range(reps))
    return 4 * N / t / 1e9


try:
    import numpy as np
    g = np.random.default_rng(0)
    print(f"numpy {np.__version__} default_rng().random(2**24, float32): {best(lambda: g.random(N, dtype=np.float32)):.2f} GB/s")
except ImportError:
    print("numpy: not installed")

try:
    import torch
    print(f"torch {torch.__version__} rand(2**24) with {torch.get_num_threads()} threads: {best(lambda: torch.rand(N)):.2f} GB/s")
except ImportError:
    print("torch: not installed")
