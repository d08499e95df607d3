#!/usr/bin/env python3
"""Holds a trainer run on the GPU against the same run (same seed, same flags) on the CPU, from
their metrics.jsonl: the training loss of each of the first STEPS steps within RTOL relative, and
the test accuracy after each epoch within ATOL. Exit status 1, with every difference printed,
when they part.

usage: compare_runs.py CPU_RUN_DIR GPU_RUN_DIR [STEPS [RTOL [ATOL]]]"""
import json
import sys


def read(run_dir):
    losses, accuracy = {}, {}
    with open(f"{run_dir}/metrics.jsonl") as f:
        for line in f:
            record = json.loads(line)
            if "train/loss" in record:
                losses[record["step"]] = record["train/loss"]
            if "test/accuracy" in record:
                accuracy[record["step"]] = record["test/accuracy"]
    return losses, accuracy


def main():
    cpu_dir, gpu_dir = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    rtol = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-3
    atol = float(sys.argv[5]) if len(sys.argv) > 5 else 0.005
    cpu_loss, cpu_acc = read(cpu_dir)
    gpu_loss, gpu_acc = read(gpu_dir)
    failures = []
    worst = 0.0
    for step in range(1, steps + 1):
        if step not in cpu_loss or step not in gpu_loss:
            failures.append(f"step {step}: no training loss logged (run both with --log-every 1)")
            continue
        c, g = cpu_loss[step], gpu_loss[step]
        rel = abs(g - c) / max(abs(c), 1e-30)
        worst = max(worst, rel)
        if rel > rtol:
            failures.append(f"step {step}: loss {g} on the GPU, {c} on the CPU ({rel:.2e} relative)")
    if sorted(cpu_acc) != sorted(gpu_acc) or not cpu_acc:
        failures.append(f"evaluations at steps {sorted(gpu_acc)} on the GPU, {sorted(cpu_acc)} on the CPU")
    for step in sorted(set(cpu_acc) & set(gpu_acc)):
        diff = abs(gpu_acc[step] - cpu_acc[step])
        print(f"step {step}: test accuracy {gpu_acc[step]:.4f} on the GPU, {cpu_acc[step]:.4f} on the CPU")
        if diff > atol:
            failures.append(f"step {step}: test accuracy differs by {diff:.4f} (> {atol})")
    print(f"first {steps} steps: largest relative loss difference {worst:.2e} (limit {rtol})")
    for f in failures:
        print("MISMATCH", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
