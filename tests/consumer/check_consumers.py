#!/usr/bin/env python3
"""Builds and runs the consumer programs the way a downstream user would.

header-only: compile consumer/header_only.cpp with only -I pytree/include (Boost from the system).
subproject:  a fresh Meson project with canopy under subprojects/ that writes dependency('canopy').
"""
import os
import shutil
import subprocess
import sys

mode, source_root, build_dir, *rest = sys.argv[1:]
here = os.path.join(source_root, "tests", "consumer")


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


if mode == "header-only":
    compiler = rest[1:]
    exe = os.path.join(build_dir, "header_only_consumer")
    run(compiler + ["-std=c++20", "-O1", "-I", os.path.join(source_root, "pytree", "include"),
                    os.path.join(here, "header_only.cpp"), "-o", exe])
    run([exe])
elif mode == "subproject":
    work = os.path.join(build_dir, "subproject_consumer")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(os.path.join(here, "project"), work)
    os.makedirs(os.path.join(work, "subprojects"))
    os.symlink(os.path.abspath(source_root), os.path.join(work, "subprojects", "canopy"))
    run(["meson", "setup", os.path.join(work, "build"), work])
    run(["ninja", "-C", os.path.join(work, "build")])
    run([os.path.join(work, "build", "consumer")])
else:
    sys.exit(f"unknown mode {mode}")
