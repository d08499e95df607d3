#!/usr/bin/env python3
"""Reads a canopy checkpoint with json + numpy only (Debian's python3-numpy, nothing from PyPI)
and compares it with values recomputed here. Usage: read_safetensors.py WRITE_CHECKPOINT_EXE.
Exits 77 (a skipped test for meson) when numpy is missing, 1 on any mismatch."""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy is not installed: skipped")
    sys.exit(77)

# safetensors dtype -> (numpy dtype, itemsize); BF16 is compared through its uint16 bits.
DTYPES = {"F32": ("<f4", 4), "F64": ("<f8", 8), "I32": ("<i4", 4), "U32": ("<u4", 4), "BOOL": ("?", 1), "BF16": ("<u2", 2),
          "U8": ("u1", 1), "I8": ("i1", 1), "F16": ("<f2", 2), "I64": ("<i8", 8), "U64": ("<u8", 8),
          "I16": ("<i2", 2), "U16": ("<u2", 2)}


def load(path):
    """The reference format, read by hand: u64 header length, JSON header, C-order data."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    problems = []
    if n % 8:
        problems.append(f"header length {n} is not a multiple of 8")
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    base, end, arrays = 8 + n, 0, {}
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        if sorted(info) != ["data_offsets", "dtype", "shape"]:
            problems.append(f"{name}: fields {sorted(info)}")
        b, e = info["data_offsets"]
        dtype, size = DTYPES[info["dtype"]]
        if b != end:
            problems.append(f"{name}: begins at {b}, previous tensor ends at {end}")
        if (base + b) % size:
            problems.append(f"{name}: starts at file offset {base + b}, not aligned to {size}")
        end = e
        arrays[name] = (info["dtype"], np.frombuffer(data[base + b : base + e], dtype=dtype).reshape(info["shape"]))
    if base + end != len(data):
        problems.append(f"tensors end at {base + end}, the file at {len(data)} (MetadataIncompleteBuffer)")
    return arrays, metadata, problems


def expected():
    bf16_bits = (np.array([-1.5, -0.5, 0.5, 1.5], np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return {
        "params/dense/w": ("F32", (np.arange(12, dtype=np.float32) * np.float32(0.5)).reshape(3, 4)),
        "params/dense/b": ("F64", np.arange(4) / 7.0),
        "opt/count": ("I32", (np.arange(6, dtype=np.int32) - 3).reshape(2, 3)),
        "opt/seed": ("U32", np.uint32(4000000000) + np.arange(3, dtype=np.uint32)),
        "opt/mask": ("BOOL", np.arange(5) % 3 == 0),
        "half": ("BF16", bf16_bits),
        "lr": ("F32", np.array(3.25, np.float32)),
        "empty": ("F32", np.zeros((0, 2), np.float32)),
        "widths/pixels": ("U8", np.array([0, 60, 120, 180, 240], np.uint8)),
        "widths/offsets": ("I8", np.array([[-128, -1], [0, 127]], np.int8)),
        "widths/f16_values": ("F16", np.array([0.1, 65504, -2.5], np.float16)),
        "widths/steps": ("I64", np.array([2**40, -3], np.int64)),
        "widths/ids": ("U64", np.array([2**63 + 5], np.uint64)),
        "widths/i16_values": ("I16", np.array([-300, 300], np.int16)),
        "widths/u16_values": ("U16", np.array([65535, 1], np.uint16)),
    }


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.argv[1], tmp], check=True)
        arrays, metadata, problems = load(os.path.join(tmp, "checkpoint_42.safetensors"))
    want = expected()
    if sorted(arrays) != sorted(want):
        problems.append(f"names {sorted(arrays)}, expected {sorted(want)}")
    for name, (dtype, value) in want.items():
        if name not in arrays:
            continue
        got_dtype, got = arrays[name]
        if got_dtype != dtype or got.shape != value.shape or not np.array_equal(got, value):
            problems.append(f"{name}: got {got_dtype}{list(got.shape)} {got.tolist()}, expected {dtype}{list(value.shape)} {value.tolist()}")
    if metadata.get("step") != "42" or metadata.get("format_version") != "1":
        problems.append(f"metadata {metadata}")
    if json.loads(metadata.get("leaves", "[]")) != list(want):
        problems.append(f"leaves {metadata.get('leaves')}, expected {list(want)} (tree order)")
    for p in problems:
        print("mismatch:", p)
    if not problems:
        print(f"ok: {len(arrays)} tensors read by numpy {np.__version__} match")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
