#!/usr/bin/env python3
"""Checks that the layers point one way: every #include of a file under pytree/, kernels/,
transforms/, random/ or train/ resolves to a file of a layer at or below its own, and a header of
transforms/ to a header of a sublayer at or below its own. Fails naming the file, the line and
both layers.

    pytree  <-  kernels  <-  transforms  <-  random  <-  train
    transforms' headers: core  <-  {primitives, jit, devices, numpy, nn, backends, api}

Within transforms/ it is the interfaces that are layered: core's headers (Array, avals, the IR,
the trace stack, primitives' rule tables, settings) include nothing of the sublayers above, so a
primitive, a pass or a jnp function compiles against core alone. core's .cpp files do call up:
Array's operators are ops, the jvp and batching traces build zeros and moves with jnp functions,
EvalTrace runs kernels on devices (as jax/_src/core.py calls into lax) -- so sources are not held
to the sublayer order.

An include resolves as the compiler resolves it: a quoted name next to the including file
first, then the layers' include/ folders. Names that resolve to no file of the tree are
system or third-party headers and are not checked, except canopy/... names, which must resolve.
Usage: check_includes.py SOURCE_ROOT [--list]   (--list prints every include's layers)
"""
import os
import re
import sys

LAYERS = ["pytree", "kernels", "transforms", "random", "train"]

# transforms/ sublayers: src/<folder>/ by its folder; public headers by this table (a path under
# include/canopy/, or a folder of it ending in '/'). core is below every other sublayer; the
# others stand side by side (a jvp rule is written with jnp functions, jnp calls the ops, jit
# applies primitives, control-flow primitives hold compiled programs), so they may include one
# another.
TRANSFORMS_HEADERS = {
    "core/jit.hpp": "jit", "core/jit_cache.hpp": "jit", "core/pmap.hpp": "devices",
    "core/": "core", "transforms/": "api",
    "array.hpp": "core", "array_pytree.hpp": "core", "device.hpp": "core", "x64.hpp": "core",
    "profiler.hpp": "core", "eigen.hpp": "core", "settings.hpp": "core",
    "matmul_precision.hpp": "primitives",
    "ops.hpp": "primitives", "numpy.hpp": "numpy", "numpy_ufuncs.hpp": "numpy",
    "nn.hpp": "nn", "devices.hpp": "devices", "transforms.hpp": "api",
}
SUBLAYER_RANK = {"core": 0, "primitives": 1, "jit": 1, "devices": 1, "numpy": 1, "nn": 1, "api": 1,
                 "backends": 1}
SOURCE_SUFFIXES = (".hpp", ".cpp", ".h", ".cu", ".cuh")
HEADER_SUFFIXES = (".hpp", ".h", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def transforms_sublayer(rel):
    """The sublayer of a path relative to transforms/."""
    parts = rel.split("/")
    if parts[0] == "src":
        folder = parts[1] if len(parts) > 2 else "core"
        if folder not in SUBLAYER_RANK:
            raise SystemExit(f"check_includes: transforms/{rel}: src/{folder}/ is no sublayer; add it to SUBLAYER_RANK")
        return folder
    if parts[:2] == ["include", "canopy"]:
        name = "/".join(parts[2:])
        if name in TRANSFORMS_HEADERS:
            return TRANSFORMS_HEADERS[name]
        folder = name.split("/")[0] + "/"
        if folder in TRANSFORMS_HEADERS:
            return TRANSFORMS_HEADERS[folder]
    raise SystemExit(f"check_includes: transforms/{rel} belongs to no sublayer; add it to TRANSFORMS_HEADERS")


def layer_of(root, path):
    """(layer, sublayer or None) of a file of the tree."""
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    top, _, rest = rel.partition("/")
    if top != "transforms":
        return top, None
    return top, transforms_sublayer(rest)


def describe(layer):
    return layer[0] if layer[1] is None else f"{layer[0]}/{layer[1]}"


def points_up(source, target, from_header):
    """Why an include from `source` to `target` is not allowed, or None."""
    s, t = LAYERS.index(source[0]), LAYERS.index(target[0])
    if t > s:
        return "points up"
    if (t == s and source[0] == "transforms" and from_header
            and SUBLAYER_RANK[target[1]] > SUBLAYER_RANK[source[1]]):
        return "points up (a header of transforms' core includes a sublayer above it)"
    return None


def main():
    root = os.path.abspath(sys.argv[1])
    listing = "--list" in sys.argv[2:]
    include_dirs = [os.path.join(root, layer, "include") for layer in LAYERS]
    problems, checked = [], 0
    for layer in LAYERS:
        for folder, dirs, files in os.walk(os.path.join(root, layer)):
            dirs.sort()
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                source = layer_of(root, path)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        quote, target_name = m.groups()
                        candidates = ([os.path.join(folder, target_name)] if quote == '"' else []) + \
                                     [os.path.join(d, target_name) for d in include_dirs]
                        found = next((os.path.normpath(c) for c in candidates if os.path.isfile(c)), None)
                        where = f"{os.path.relpath(path, root)}:{number}"
                        if found is None:
                            if target_name.startswith("canopy/"):
                                problems.append(f"{where}: #include {target_name} resolves to no file of the tree")
                            continue
                        if not found.startswith(root + os.sep) or layer_of(root, found)[0] not in LAYERS:
                            problems.append(f"{where}: #include {target_name} reaches outside the layers "
                                            f"({os.path.relpath(found, root)})")
                            continue
                        checked += 1
                        target = layer_of(root, found)
                        why = points_up(source, target, name.endswith(HEADER_SUFFIXES))
                        if listing:
                            print(f"{where}: {describe(source)} -> {describe(target)}{' UP' if why else ''}")
                        if why:
                            problems.append(f"{where}: #include {target_name} {why}: {describe(source)} includes "
                                            f"{describe(target)} ({os.path.relpath(found, root)})")
    for p in problems:
        print(p)
    print(f"check_includes: {checked} includes within the layers, {len(problems)} pointing up or unresolved")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
