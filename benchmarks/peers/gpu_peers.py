#!/usr/bin/env python3
"""The GPU workloads of BENCHMARKS.md (W2, W5, W3, W4, W9) in JAX and PyTorch, timed on the same GPU
as bench_gpu in the same run, so that canopy's figures compare with theirs. Each framework is
timed at its default precision (on Ampere and newer: TF32 for JAX's f32 matmuls and convolutions,
and for PyTorch's convolutions) and at `highest` (no TF32), since canopy computes f32 exactly unless
asked. Prints one JSON line per figure, as the C++ benchmarks do:
  {"workload": "W3", "case": "batch=128", "peer": "jax-highest", "metric": "ms_per_step", "value": 0.17, "unit": "ms"}

usage: gpu_peers.py [--only jax|torch] [--data DIR]   (DIR: the Fashion-MNIST IDX files, for W9)
A framework that does not import is skipped with a line on stderr."""
import argparse
import contextlib
import gzip
import json
import os
import statistics
import sys
import time


def emit(workload, case, peer, metric, value, unit):
    print(json.dumps({"workload": workload, "case": case, "peer": peer, "metric": metric, "value": value, "unit": unit}),
          flush=True)


def timed(run, sync, repeats=20, warmup=3):
    """Median seconds of run() over `repeats` calls, each followed by sync()."""
    for _ in range(warmup):
        run()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fashion_mnist(data_dir, n_train=60000):
    import numpy as np
    path = os.path.join(data_dir, "train-images-idx3-ubyte.gz")
    if not os.path.exists(path):
        rng = np.random.default_rng(0)
        return rng.random((n_train, 784), dtype=np.float32), rng.integers(0, 10, n_train).astype(np.int32)
    with gzip.open(path) as f:
        images = np.frombuffer(f.read()[16:], dtype=np.uint8).reshape(-1, 784).astype(np.float32) / 255.0
    with gzip.open(os.path.join(data_dir, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read()[8:], dtype=np.uint8).astype(np.int32)
    return images, labels


# ---- JAX

def run_jax(data_dir):
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    dev = jax.devices()[0]
    sync = lambda x: jax.block_until_ready(x)

    for precision in ("default", "highest"):
        peer = f"jax-{precision}"
        # JAX's default is its own (TF32 on these GPUs); `highest` computes f32 matmuls and
        # convolutions in f32.
        scope = jax.default_matmul_precision("highest") if precision == "highest" else contextlib.nullcontext()
        with scope:
            # W2: matmul, TFLOP/s.
            for dtype, name in ((jnp.float32, "f32"), (jnp.bfloat16, "bf16")):
                if dtype == jnp.bfloat16 and precision == "highest":
                    continue  # bf16 products are bf16 either way
                for n in (2048, 4096, 8192):
                    k = jax.random.PRNGKey(0)
                    a = jax.random.uniform(k, (n, n), dtype, -1, 1)
                    b = jax.random.uniform(jax.random.fold_in(k, 1), (n, n), dtype, -1, 1)
                    mm = jax.jit(lambda x, y: x @ y)
                    out = {}
                    t = timed(lambda: out.__setitem__("c", mm(a, b)), lambda: sync(out["c"]), repeats=10)
                    emit("W2", f"{name} n={n}", peer, "tflops", 2 * n ** 3 / t / 1e12, "TFLOP/s")
            # W3: MLP SGD step.
            key = jax.random.PRNGKey(0)
            sizes = [784, 512, 512, 10]
            params = []
            for i, (fi, fo) in enumerate(zip(sizes[:-1], sizes[1:])):
                bound = 1 / fi ** 0.5
                kw, kb = jax.random.split(jax.random.fold_in(key, i))
                params.append((jax.random.uniform(kw, (fi, fo), jnp.float32, -bound, bound),
                               jax.random.uniform(kb, (fo,), jnp.float32, -bound, bound)))
            x = jax.random.uniform(key, (128, 784), jnp.float32)
            y = jax.random.randint(key, (128,), 0, 10)

            def mlp_loss(p, x, y):
                h = x
                for i, (w, b) in enumerate(p):
                    h = h @ w + b
                    if i + 1 < len(p):
                        h = jax.nn.relu(h)
                return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(h), y[:, None], 1))

            @jax.jit
            def sgd_step(p, x, y):
                g = jax.grad(mlp_loss)(p, x, y)
                return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)

            state = {"p": params}
            t = timed(lambda: state.__setitem__("p", sgd_step(state["p"], x, y)), lambda: sync(state["p"]), repeats=200)
            emit("W3", "batch=128", peer, "ms_per_step", t * 1e3, "ms")

            # W4: CNN SGD step, NHWC.
            def conv(x, w):
                return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

            def pool(x):
                return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

            k = jax.random.split(key, 8)
            cnn = {"c1": jax.random.normal(k[0], (3, 3, 1, 32)) * 0.3, "b1": jnp.zeros(32),
                   "c2": jax.random.normal(k[1], (3, 3, 32, 64)) * 0.06, "b2": jnp.zeros(64),
                   "f1": jax.random.normal(k[2], (3136, 128)) * 0.018, "g1": jnp.zeros(128),
                   "f2": jax.random.normal(k[3], (128, 10)) * 0.09, "g2": jnp.zeros(10)}
            xc = jax.random.uniform(k[4], (64, 28, 28, 1), jnp.float32)
            yc = jax.random.randint(k[5], (64,), 0, 10)

            def cnn_loss(p, x, y):
                h = pool(jax.nn.relu(conv(x, p["c1"]) + p["b1"]))
                h = pool(jax.nn.relu(conv(h, p["c2"]) + p["b2"]))
                h = jax.nn.relu(h.reshape(h.shape[0], -1) @ p["f1"] + p["g1"])
                logits = h @ p["f2"] + p["g2"]
                return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))

            @jax.jit
            def cnn_step(p, x, y):
                g = jax.grad(cnn_loss)(p, x, y)
                return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)

            state = {"p": cnn}
            t = timed(lambda: state.__setitem__("p", cnn_step(state["p"], xc, yc)), lambda: sync(state["p"]), repeats=100)
            emit("W4", "batch=64", peer, "ms_per_step", t * 1e3, "ms")

            # W9: one epoch of the W3 MLP with Adam, as one jitted scan with the data on the GPU.
            images, labels = fashion_mnist(data_dir)
            xs = jax.device_put(jnp.asarray(images), dev)
            ys = jax.device_put(jnp.asarray(labels), dev)
            steps = xs.shape[0] // 128

            def adam_init(p):
                z = jax.tree_util.tree_map(jnp.zeros_like, p)
                return (p, z, z, jnp.zeros((), jnp.int32))

            def adam_step(s, batch):
                p, m, v, t = s
                g = jax.grad(mlp_loss)(p, *batch)
                t = t + 1
                m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
                v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
                c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
                p = jax.tree_util.tree_map(lambda a, mm, vv: a - 1e-3 * (mm / c1) / (jnp.sqrt(vv / c2) + 1e-8), p, m, v)
                return (p, m, v, t), None

            @jax.jit
            def epoch(s, key):
                perm = jax.random.permutation(key, xs.shape[0])[: steps * 128].reshape(steps, 128)
                s, _ = lax.scan(adam_step, s, (xs[perm], ys[perm]))
                return s

            s = adam_init(params)
            for e in range(3):
                t0 = time.perf_counter()
                s = epoch(s, jax.random.PRNGKey(e))
                sync(s)
                emit("W9", f"epoch {e + 1} (scan of {steps} steps, data on the GPU; the last partial batch dropped)", peer,
                     "s_per_epoch", time.perf_counter() - t0, "s")

        # W5: the elementwise chain (no matmul: precision does not apply), once.
        if precision == "default":
            f = jax.jit(lambda x: jnp.tanh(x * 1.5 - 0.25) * 0.75)
            for n in (1 << 20, 1 << 24):
                x = jax.random.uniform(jax.random.PRNGKey(0), (n,), jnp.float32, -3, 3)
                out = {}
                t = timed(lambda: out.__setitem__("y", f(x)), lambda: sync(out["y"]), repeats=50)
                emit("W5", f"n=2^{n.bit_length() - 1}", "jax", "us_per_call", t * 1e6, "us")
                emit("W5", f"n=2^{n.bit_length() - 1}", "jax", "gbps", 8 * n / t / 1e9, "GB/s")


# ---- PyTorch

def run_torch(data_dir):
    import torch
    import torch.nn.functional as F

    dev = torch.device("cuda")
    sync = torch.cuda.synchronize
    default_conv_tf32 = torch.backends.cudnn.allow_tf32
    default_mm_tf32 = torch.backends.cuda.matmul.allow_tf32
    for precision in ("default", "highest"):
        peer = f"torch-{precision}"
        torch.backends.cudnn.allow_tf32 = default_conv_tf32 if precision == "default" else False
        torch.backends.cuda.matmul.allow_tf32 = default_mm_tf32 if precision == "default" else False
        torch.manual_seed(0)
        for dtype, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
            if dtype == torch.bfloat16 and precision == "highest":
                continue
            for n in (2048, 4096, 8192):
                a = torch.rand(n, n, device=dev, dtype=dtype) * 2 - 1
                b = torch.rand(n, n, device=dev, dtype=dtype) * 2 - 1
                t = timed(lambda: a @ b, sync, repeats=10)
                emit("W2", f"{name} n={n}", peer, "tflops", 2 * n ** 3 / t / 1e12, "TFLOP/s")
        # W3: eager MLP SGD step.
        mlp = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                  torch.nn.Linear(512, 10)).to(dev)
        opt = torch.optim.SGD(mlp.parameters(), lr=0.01)
        x = torch.rand(128, 784, device=dev)
        y = torch.randint(0, 10, (128,), device=dev)

        def mlp_step():
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(mlp(x), y).backward()
            opt.step()

        emit("W3", "batch=128", peer + "-eager", "ms_per_step", timed(mlp_step, sync, repeats=200) * 1e3, "ms")
        # W4: eager CNN SGD step (NCHW, PyTorch's layout).
        cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                  torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                  torch.nn.Flatten(), torch.nn.Linear(3136, 128), torch.nn.ReLU(),
                                  torch.nn.Linear(128, 10)).to(dev)
        copt = torch.optim.SGD(cnn.parameters(), lr=0.01)
        xc = torch.rand(64, 1, 28, 28, device=dev)
        yc = torch.randint(0, 10, (64,), device=dev)

        def cnn_step():
            copt.zero_grad(set_to_none=True)
            F.cross_entropy(cnn(xc), yc).backward()
            copt.step()

        emit("W4", "batch=64", peer + "-eager", "ms_per_step", timed(cnn_step, sync, repeats=100) * 1e3, "ms")
        # W9: eager epochs of the MLP with Adam, the data on the GPU.
        images, labels = fashion_mnist(data_dir)
        xs = torch.from_numpy(images).to(dev)
        ys = torch.from_numpy(labels).long().to(dev)
        model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 10)).to(dev)
        adam = torch.optim.Adam(model.parameters(), lr=1e-3)
        for e in range(2):
            sync()
            t0 = time.perf_counter()
            perm = torch.randperm(xs.shape[0], device=dev)
            for i in range(0, xs.shape[0], 128):
                idx = perm[i:i + 128]
                adam.zero_grad(set_to_none=True)
                F.cross_entropy(model(xs[idx]), ys[idx]).backward()
                adam.step()
            sync()
            emit("W9", f"epoch {e + 1} (eager loop, data on the GPU)", peer + "-eager", "s_per_epoch",
                 time.perf_counter() - t0, "s")
        if precision == "default":
            for n in (1 << 20, 1 << 24):
                xw = torch.rand(n, device=dev) * 6 - 3
                t = timed(lambda: torch.tanh(xw * 1.5 - 0.25) * 0.75, sync, repeats=50)
                emit("W5", f"n=2^{n.bit_length() - 1}", "torch-eager", "us_per_call", t * 1e6, "us")
                emit("W5", f"n=2^{n.bit_length() - 1}", "torch-eager", "gbps", 8 * n / t / 1e9, "GB/s")
    torch.backends.cudnn.allow_tf32 = default_conv_tf32
    torch.backends.cuda.matmul.allow_tf32 = default_mm_tf32


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["jax", "torch"])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args()
    status = 0
    for name, run in (("jax", run_jax), ("torch", run_torch)):
        if args.only and args.only != name:
            continue
        try:
            __import__(name)
        except ImportError as e:
            print(f"gpu_peers: {name} not importable here ({e}): skipped", file=sys.stderr)
            continue
        try:
            run(args.data)
        except Exception as e:  # one framework failing must not lose the other's figures
            print(f"gpu_peers: {name} failed: {e!r}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
