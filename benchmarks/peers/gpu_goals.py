#!/usr/bin/env python3
"""canopy's GPU speed goals checked against one GPU run's output folder (what `.ci/gpu_run speed`
writes to $OUT): bench_gpu.json (Google Benchmark's JSON), peers_jax.log and peers_torch.log
(gpu_peers.py's JSON lines) and mlp_gpu_metrics.jsonl (the trainer's metrics). Every figure
compared comes from that one run, on one card.

The goals, each beside the best peer measured at equal precision (canopy's f32 is exact unless
asked otherwise, so its f32 workloads are compared with the peers at `highest`; the peers' default,
TF32 on these GPUs, is printed beside it):
  W2  bf16 matmul, n = 2048, 4096, 8192: TFLOP/s >= 0.95 x the best peer's, timed as the peers
      time it (bench_gpu's w2_matmul_canopy_burst)
  W5  tanh(x*1.5-0.25)*0.75 on 2^24 f32: >= 0.8 x a device copy's bandwidth, and faster than JAX
  W3  MLP SGD step, batch 128: <= 0.8 x JAX's time
  W4  CNN SGD step, batch 64: <= JAX's time
  W9  Fashion-MNIST MLP epoch with the trainer's own loop: <= 1.5 x JAX's epoch (a jitted scan);
      the first epoch (compiles included) under 1 s

usage: gpu_goals.py OUT_DIR
Prints one line per goal (canopy's figure, the peers', the ratio, held or MISSED) and exits 0 when
every goal held, 1 when one was missed, 2 when a figure a goal needs is missing."""
import json
import os
import re
import sys

UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def read_bench(path):
    """bench_gpu's iterations by name: (seconds per iteration, counters)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    runs = {}
    for b in doc.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or "error_occurred" in b:
            continue
        # What Iterations(n), UseRealTime() and UseManualTime() append to a case's name.
        name = re.sub(r"(/iterations:\d+)?(/real_time|/manual_time)?$", "", b["name"])
        runs[name] = (b["real_time"] * UNIT_SECONDS[b.get("time_unit", "ns")], b)
    return runs


def read_peers(paths):
    """The peers' figures: {(workload, case, peer, metric): value}; lines that are not figures are skipped."""
    figures = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if isinstance(r, dict) and {"workload", "case", "peer", "metric", "value"} <= r.keys():
                    figures[(r["workload"], r["case"], r["peer"], r["metric"])] = r["value"]
    return figures


def read_epochs(path):
    """The trainer's epoch seconds, in order."""
    if not os.path.exists(path):
        return []
    seconds = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if "train/epoch_seconds" in r:
                seconds.append(r["train/epoch_seconds"])
    return seconds


class Verdicts:
    def __init__(self):
        self.missed = self.missing = 0

    def goal(self, name, ok, text):
        if ok is None:
            self.missing += 1
            print(f"{name}: no figure ({text})")
            return
        self.missed += not ok
        print(f"{name}: {'held' if ok else 'MISSED'}: {text}")


def peer_values(peers, workload, case, metric, names):
    return {p: peers[(workload, case, p, metric)] for p in names if (workload, case, p, metric) in peers}


def check(out_dir):
    v = Verdicts()
    bench_path = os.path.join(out_dir, "bench_gpu.json")
    bench = read_bench(bench_path) if os.path.exists(bench_path) else {}
    peers = read_peers([os.path.join(out_dir, f"peers_{p}.log") for p in ("jax", "torch")])

    # Timed as the peers time it (the median of 10 calls after 3, from an idle GPU): bench_gpu's
    # burst; its back-to-back loop over half a second (the sustained figure) is printed beside it.
    for n in (2048, 4096, 8192):
        run = bench.get(f"w2_matmul_canopy_burst/bf16/{n}")
        best = peer_values(peers, "W2", f"bf16 n={n}", "tflops", ("jax-default", "torch-default"))
        if not run or not best:
            v.goal(f"W2 bf16 n={n}", None, "bench_gpu's w2_matmul_canopy_burst/bf16 or a peer's bf16 TFLOP/s")
            continue
        mine, (peer, theirs) = run[1]["TFLOP/s"], max(best.items(), key=lambda kv: kv[1])
        sustained = bench.get(f"w2_matmul_canopy/bf16/{n}")
        cublas = bench.get(f"w2_matmul_cublas_burst/bf16/{n}")
        beside = (f"; sustained {sustained[1]['TFLOP/s']:.0f}" if sustained else "") + \
                 (f"; cuBLAS timed alike {cublas[1]['TFLOP/s']:.0f}" if cublas else "")
        v.goal(f"W2 bf16 n={n}", mine >= 0.95 * theirs,
               f"{mine:.0f} TFLOP/s, {peer} {theirs:.0f}: {mine / theirs:.3f}x (goal >= 0.95x){beside}")

    n = 1 << 24
    chain, copy = bench.get(f"w5_chain_jit/generated/{n}"), bench.get(f"w5_copy_d2d/{n}")
    jax_us = peers.get(("W5", "n=2^24", "jax", "us_per_call"))
    if not chain or not copy or jax_us is None:
        v.goal("W5 2^24", None, "bench_gpu's w5_chain_jit/generated and w5_copy_d2d, and JAX's W5")
    else:
        mine_gbps, copy_gbps = 8 * n / chain[0] / 1e9, 8 * n / copy[0] / 1e9
        v.goal("W5 2^24", mine_gbps >= 0.8 * copy_gbps and chain[0] * 1e6 < jax_us,
               f"{chain[0] * 1e6:.1f} us = {mine_gbps:.0f} GB/s, {mine_gbps / copy_gbps:.2f}x the copy's "
               f"{copy_gbps:.0f} GB/s (goal >= 0.8x); JAX {jax_us:.1f} us (goal: faster)")

    for workload, name, case, factor in (("W3", "w3_mlp_step", "batch=128", 0.8), ("W4", "w4_cnn_step", "batch=64", 1.0)):
        runs = [bench[k][0] for k in (f"{name}/gpu", f"{name}/gpu_donated") if k in bench]
        kernels = [bench[k][1]["kernels/step"] for k in (f"{name}/gpu", f"{name}/gpu_donated")
                   if k in bench and "kernels/step" in bench[k][1]]
        jax = peer_values(peers, workload, case, "ms_per_step", ("jax-highest", "jax-default"))
        if not runs or "jax-highest" not in jax:
            v.goal(workload, None, f"bench_gpu's {name}/gpu and JAX's {workload} at highest")
            continue
        mine = min(runs) * 1e3
        default = f"; JAX's default {jax['jax-default']:.3f} ms" if "jax-default" in jax else ""
        default += f"; {kernels[0]:.0f} kernels a step" if kernels else ""
        v.goal(workload, mine <= factor * jax["jax-highest"],
               f"{mine:.3f} ms, JAX at highest {jax['jax-highest']:.3f} ms: {mine / jax['jax-highest']:.2f}x "
               f"(goal <= {factor}x){default}")

    epochs = read_epochs(os.path.join(out_dir, "mlp_gpu_metrics.jsonl"))
    jax_epoch = [peers[k] for k in sorted(peers) if k[0] == "W9" and k[2] == "jax-highest" and k[1].startswith("epoch 2 ")]
    if len(epochs) < 2 or not jax_epoch:
        v.goal("W9", None, "the trainer's 2 epochs (mlp_gpu_metrics.jsonl) and JAX's second epoch at highest")
    else:
        v.goal("W9 epoch", epochs[1] <= 1.5 * jax_epoch[0],
               f"{epochs[1]:.3f} s, JAX's scan at highest {jax_epoch[0]:.3f} s: {epochs[1] / jax_epoch[0]:.2f}x (goal <= 1.5x)")
        v.goal("W9 first epoch", epochs[0] < 1.0, f"{epochs[0]:.3f} s, compiles included (goal < 1 s)")
    return 1 if v.missed else (2 if v.missing else 0)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(check(sys.argv[1]))
