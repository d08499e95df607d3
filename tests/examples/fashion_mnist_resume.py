"""The main job's promises, run as a user would: a short Fashion-MNIST run reaches a stated test
accuracy, and a run stopped after one epoch and resumed from its checkpoint logs exactly the
metrics of an uninterrupted run, as does one with its training set on the device and one that runs
each epoch as one jitted scan. Usage: fashion_mnist_resume.py <path to the fashion_mnist binary>"""
import json
import os
import subprocess
import sys
import tempfile

DATA = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
if not os.path.exists(DATA):
    print("skipped: dataset-fashion-mnist is not installed")
    sys.exit(77)  # meson's "skipped"

binary = sys.argv[1]
common = ["--train-limit", "5000", "--test-limit", "2000", "--no-progress", "--seed", "3"]


def train(out, epochs, *extra):
    run = subprocess.run([binary, "--out", out, "--epochs", str(epochs), *common, *extra],
                         capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        sys.exit(f"fashion_mnist failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    return run.stdout


def step_losses(out):
    """The per-step training losses of metrics.jsonl, by step."""
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return {r["step"]: r["train/loss"] for r in map(json.loads, f) if "train/loss" in r}


def check_same_epochs(expected, out, what):
    """The epoch records of the run in `out` equal `expected`'s at steps 40 and 80, bit for bit."""
    got = epoch_records(out)
    for step in (40, 80):
        for key in ("train/epoch_loss", "test/loss", "test/accuracy"):
            assert expected[step][key] == got[step][key], f"step {step} {key}: host batches {expected[step][key]} != {what} {got[step][key]}"


def epoch_records(out):
    """The per-epoch metrics lines of metrics.jsonl, by step."""
    records = {}
    with open(os.path.join(out, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if "test/accuracy" in r:
                records[r["step"]] = r
    return records


with tempfile.TemporaryDirectory() as tmp:
    whole, split = os.path.join(tmp, "whole"), os.path.join(tmp, "split")
    train(whole, 2)
    train(split, 1)
    resumed = train(split, 2, "--resume")
    assert "resumed from step 40" in resumed, resumed
    # A fresh run into a directory that holds one is refused (it would mix the two runs' files).
    refused = subprocess.run([binary, "--out", split, "--epochs", "1", *common], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "already holds a run" in refused.stderr, refused.stderr
    # So is a resume with settings that change what a step reads.
    other = subprocess.run([binary, "--out", split, "--epochs", "3", "--resume", *common[:-1], "4"],
                           capture_output=True, text=True, timeout=300)
    assert other.returncode == 2 and "other settings" in other.stderr, other.stderr

    a, b = epoch_records(whole), epoch_records(split)
    assert sorted(a) == [40, 80] and sorted(b) == [40, 80], (sorted(a), sorted(b))
    for key in ("train/epoch_loss", "test/loss", "test/accuracy"):
        assert a[80][key] == b[80][key], f"epoch 2 {key}: uninterrupted {a[80][key]} != resumed {b[80][key]}"
    # The resumed run's curves hold the first run's epoch too: two points of test accuracy.
    svg = open(os.path.join(split, "curves.svg")).read()
    line = [l for l in svg.splitlines() if "<title>test/accuracy</title>" in l]
    assert line and line[0].split('points="')[1].split('"')[0].count(",") == 2, line
    # The training set kept on the device and shuffled there visits the same rows in the same
    # order as the host's batches: the same metrics, bit for bit.
    on_device = os.path.join(tmp, "device")
    train(on_device, 2, "--device-data")
    check_same_epochs(a, on_device, "device")
    # Each epoch as one jitted scan over its stacked batches (the last partial batch as one more
    # step): the step-by-step run's metrics, bit for bit, the per-step losses logged after the epoch.
    scanned = os.path.join(tmp, "scan")
    train(scanned, 2, "--scan-epoch")
    check_same_epochs(a, scanned, "scanned")
    assert step_losses(whole) == step_losses(scanned), (step_losses(whole), step_losses(scanned))
    refused = subprocess.run([binary, "--out", os.path.join(tmp, "refused"), "--epochs", "1", "--scan-epoch", "--host-data",
                              *common], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "excludes --host-data" in refused.stderr, refused.stderr
    accuracy = a[80]["test/accuracy"]
    assert accuracy >= 0.75, f"test accuracy {accuracy} after 2 epochs on 5000 examples is below 0.75"
    for name in ("curves.svg", "tensorboard", "checkpoints", "best/results.json"):
        assert os.path.exists(os.path.join(whole, name)), name
    print(f"resumed run equals the uninterrupted one; test accuracy {accuracy:.4f}")
