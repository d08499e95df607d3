#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus (tests/fuzz/corpus), deterministically: re-run it after adding
a primitive. ops: `<primitive>\\0` and a few perturbed variants per primitive; transforms: the same
behind a leading byte choosing vjp/jvp/vmap/jit; safetensors and idx: small valid files of each
dtype and layout the readers accept. Usage: tests/fuzz/make_seeds.py [repo root]"""
import gzip
import json
import os
import re
import struct
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
corpus = os.path.join(root, "tests", "fuzz", "corpus")


def write(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def primitive_names():
    names = set()
    for base in ("transforms/src", "random/src"):
        for dirpath, _, files in os.walk(os.path.join(root, base)):
            for f in files:
                if f.endswith(".cpp"):
                    text = open(os.path.join(dirpath, f)).read()
                    names.update(re.findall(r'static constexpr std::string_view name = "([a-z0-9_]+)"', text))
    return sorted(names)


# Byte strings after the name: sample 0 unchanged; params perturbed; inputs re-drawn; an input dropped.
VARIANTS = {"plain": b"", "params": b"\x00\x01\x01\x01\x01\x01\x01\x01", "inputs": b"\x00\x00\x03\x04\x03\x04",
            "arity": b"\x00\x00\x00\x00\x00\x00\x00\x00\x01"}
for prim in primitive_names():
    for v, tail in VARIANTS.items():
        write("ops", f"{prim}-{v}", prim.encode() + b"\0" + tail)
    for mode, m in enumerate(("vjp", "jvp", "vmap", "jit")):
        write("transforms", f"{prim}-{m}", bytes([mode]) + prim.encode() + b"\0")


def safetensors(tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


write("safetensors", "f32-matrix", safetensors({"w": ("F32", [2, 3], struct.pack("<6f", *range(6)))}))
write("safetensors", "mixed-dtypes", safetensors({
    "a": ("F64", [2], struct.pack("<2d", 1.5, -2)), "b": ("I32", [3], struct.pack("<3i", 1, -2, 3)),
    "c": ("U8", [4], bytes([0, 1, 254, 255])), "d": ("BOOL", [2], bytes([0, 1])),
    "e": ("BF16", [1], b"\x80\x3f"), "f": ("F16", [1], b"\x00\x3c"), "g": ("I64", [1], struct.pack("<q", -5)),
    "h": ("U16", [1], struct.pack("<H", 7)), "i": ("I8", [1], struct.pack("<b", -7)),
    "j": ("I16", [1], struct.pack("<h", -9)), "k": ("U32", [1], struct.pack("<I", 9)),
    "l": ("U64", [1], struct.pack("<Q", 11))}))
write("safetensors", "metadata-scalar-empty", safetensors(
    {"s": ("F32", [], struct.pack("<f", 3)), "z": ("F32", [0, 4], b"")}, {"step": "10", "format": "pt"}))
write("safetensors", "empty", safetensors({}))


def idx(shape, payload):
    return bytes([0, 0, 8, len(shape)]) + b"".join(struct.pack(">I", d) for d in shape) + payload


write("idx", "images", idx([2, 3, 3], bytes(range(18))))
write("idx", "labels", idx([5], bytes([0, 9, 3, 1, 2])))
write("idx", "images-gz", gzip.compress(idx([1, 2, 2], bytes([1, 2, 3, 4])), mtime=0))
write("idx", "empty-dim", idx([0, 28], b""))
