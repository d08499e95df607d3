#!/usr/bin/env python3
"""benchmarks/peers/gpu_goals.py on run folders written here in the shapes .ci/gpu_run leaves
(Google Benchmark's JSON, gpu_peers.py's JSON lines among other output, the trainer's metrics):
every goal held, one missed by a hair, and figures missing. usage: gpu_goals_test.py GPU_GOALS_PY"""
import json
import os
import subprocess
import sys
import tempfile


def bench_entry(name, seconds, timing="real_time", **counters):
    # As bench_gpu writes them (UseRealTime() names a benchmark .../real_time, UseManualTime() .../manual_time,
    # and Iterations(1) puts /iterations:1 before that).
    return dict({"name": f"{name}/{timing}", "run_type": "iteration", "real_time": seconds * 1e9, "time_unit": "ns"},
                **counters)


def write_run(folder, w3_ms=0.10, w5_us=50.0, epoch_s=0.030, w2_burst=680.0):
    n = 1 << 24
    benchmarks = [bench_entry(f"w2_matmul_canopy/bf16/{k}", 0.01, **{"TFLOP/s": 600.0}) for k in (2048, 4096, 8192)]
    benchmarks += [bench_entry(f"w2_matmul_canopy_burst/bf16/{k}", 0.01, "iterations:1/manual_time", **{"TFLOP/s": w2_burst})
                   for k in (2048, 4096, 8192)]
    benchmarks += [bench_entry(f"w2_matmul_cublas_burst/bf16/{k}", 0.01, "iterations:1/manual_time", **{"TFLOP/s": 675.0})
                   for k in (2048, 4096, 8192)]
    benchmarks += [bench_entry(f"w5_chain_jit/generated/{n}", w5_us * 1e-6), bench_entry(f"w5_copy_d2d/{n}", 44e-6),
                   bench_entry("w3_mlp_step/gpu", w3_ms * 1e-3, **{"kernels/step": 17.0}),
                   bench_entry("w3_mlp_step/gpu_donated", 0.2e-3),
                   bench_entry("w4_cnn_step/gpu", 0.45e-3),
                   dict(bench_entry("w4_cnn_step/gpu_donated", 0.1e-3), run_type="aggregate")]  # aggregates are not runs
    with open(os.path.join(folder, "bench_gpu.json"), "w") as f:
        json.dump({"context": {}, "benchmarks": benchmarks}, f)
    figures = [("W3", "batch=128", "jax-highest", "ms_per_step", 0.168), ("W3", "batch=128", "jax-default", "ms_per_step", 0.158),
               ("W4", "batch=64", "jax-highest", "ms_per_step", 0.589), ("W5", "n=2^24", "jax", "us_per_call", 122.0),
               ("W9", "epoch 1 (scan of 468 steps)", "jax-highest", "s_per_epoch", 11.3),
               ("W9", "epoch 2 (scan of 468 steps)", "jax-highest", "s_per_epoch", 0.030)]
    figures += [("W2", f"bf16 n={k}", "jax-default", "tflops", 613.0) for k in (2048, 4096, 8192)]
    with open(os.path.join(folder, "peers_jax.log"), "w") as f:
        f.write("WARNING: a line the framework printed\n")
        for w, c, p, m, value in figures:
            f.write(json.dumps({"workload": w, "case": c, "peer": p, "metric": m, "value": value, "unit": ""}) + "\n")
    with open(os.path.join(folder, "peers_torch.log"), "w") as f:
        for k in (2048, 4096, 8192):
            f.write(json.dumps({"workload": "W2", "case": f"bf16 n={k}", "peer": "torch-default", "metric": "tflops",
                                "value": 690.0, "unit": "TFLOP/s"}) + "\n")
    with open(os.path.join(folder, "mlp_gpu_metrics.jsonl"), "w") as f:
        f.write(json.dumps({"step": 10, "train/loss": 0.5}) + "\n")
        for step, s in ((469, 0.8), (938, epoch_s)):
            f.write(json.dumps({"step": step, "train/epoch_loss": 0.6, "train/epoch_seconds": s}) + "\n")


def run(script, folder):
    p = subprocess.run([sys.executable, script, folder], capture_output=True, text=True)
    return p.returncode, p.stdout


def main():
    script = sys.argv[1]
    failures = []

    def expect(what, condition):
        if not condition:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        write_run(d)
        code, out = run(script, d)
        expect(f"every goal held: exit 0, got {code}:\n{out}", code == 0 and "MISSED" not in out)
        expect("W2 compares the burst timed as the peers time theirs with the best peer (PyTorch's 690), the "
               "sustained and cuBLAS figures beside it",
               "680 TFLOP/s, torch-default 690: 0.986x (goal >= 0.95x); sustained 600; cuBLAS timed alike 675" in out)
        expect("W3 picks the faster of the graph runs", "0.100 ms, JAX at highest 0.168 ms: 0.60x" in out)
        expect("W3 says how many kernels a step launched", "17 kernels a step" in out)
        expect("an aggregate is not a run", "W4: held: 0.450 ms" in out)
        expect("W9 reads the second epoch", "W9 epoch: held: 0.030 s" in out)
    for what, kwargs, line in (("W2 at 0.94x PyTorch", {"w2_burst": 0.94 * 690}, "W2 bf16 n=8192: MISSED"),
                               ("W3 at 0.81x JAX", {"w3_ms": 0.81 * 0.168}, "W3: MISSED"),
                               ("W5 below 0.8x the copy", {"w5_us": 56.0}, "W5 2^24: MISSED"),
                               ("W9 at 1.51x JAX", {"epoch_s": 0.0453}, "W9 epoch: MISSED")):
        with tempfile.TemporaryDirectory() as d:
            write_run(d, **kwargs)
            code, out = run(script, d)
            expect(f"{what}: exit 1 and '{line}', got {code}:\n{out}", code == 1 and line in out)
    with tempfile.TemporaryDirectory() as d:
        write_run(d)
        os.remove(os.path.join(d, "mlp_gpu_metrics.jsonl"))
        code, out = run(script, d)
        expect(f"a missing figure: exit 2, got {code}:\n{out}", code == 2 and "W9: no figure" in out)
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
