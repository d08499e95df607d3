#!/usr/bin/python3
"""W3 peer of shared/BENCHMARKS.md in PyTorch (Debian's python3-torch): the MLP's plain-SGD train
step with the model compiled by torch.jit.trace (the best peer of the W3 goal), and eagerly.

x 128x784 U[0,1), labels in 0..9; 784->512->512->10, ReLU, mean softmax cross-entropy, SGD 0.01;
PyTorch's default init. Warm-up, then the median ms/step, one JSON line per case, as the C++
peers print (with the BLAS libtorch_cpu loaded, which decides the speed: see RESULTS.md).

  /usr/bin/python3 benchmarks/peers/w3_step_torch_jit.py [--steps 200] [--threads 2]
"""
import argparse
import json
import os
import statistics
import time

import torch


def loaded_blas():
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line[line.find("/"):].strip() if "/" in line else ""
            base = os.path.basename(path)
            if "blas" in base or "blis" in base or "mkl_rt" in base:
                return path
    return "none"


def time_steps(model, x, y, warmup, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms), min(ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    x = torch.rand(128, 784)
    y = torch.randint(0, 10, (128,))
    for peer in ("pytorch-jit-trace", "pytorch"):
        mlp = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                  torch.nn.ReLU(), torch.nn.Linear(512, 10))
        model = torch.jit.trace(mlp, x) if peer == "pytorch-jit-trace" else mlp
        median, best = time_steps(model, x, y, args.warmup, args.steps)
        print(json.dumps({"workload": "W3", "case": "batch=128", "peer": peer, "metric": "ms_per_step",
                          "value": round(median, 3), "unit": "ms", "min_ms": round(best, 3), "steps": args.steps,
                          "threads": args.threads, "torch": torch.__version__, "blas": loaded_blas(),
                          "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", "")}), flush=True)


if __name__ == "__main__":
    main()
