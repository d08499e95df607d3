#!/usr/bin/env python3
"""Builds and runs the consumer programs the way a downstream user would.

header-only: compile consumer/header_only.cpp with only -I pytree/include (Boost from the system).
subproject:  a fresh Meson project with canopy under subprojects/ that writes dependency('canopy'),
             configured with -Dcanopy:cuda=disabled (so the build without a GPU backend is
             checked too, and nvcc does not run twice) and buildtype plain (no debug information,
             which takes a third of the compile time), building what the consumer needs only.
installed:   `meson install` of this build into a scratch DESTDIR, then a program built with
             nothing but `$(pkg-config --cflags --libs canopy)` (libcanopy_random and libcanopy)
             and run, and a training program
             built with `pkg-config canopy-train` and the run path README names.
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
    run(["meson", "setup", "--buildtype=plain", "-Dcanopy:cuda=disabled", os.path.join(work, "build"), work])
    run(["ninja", "-C", os.path.join(work, "build"), "consumer"])
    run([os.path.join(work, "build", "consumer")])
elif mode == "installed":
    top_build, compiler = rest[0], rest[2:]
    dest = os.path.join(build_dir, "installed_consumer")
    shutil.rmtree(dest, ignore_errors=True)
    run(["meson", "install", "-C", top_build, "--destdir", dest, "--quiet"])
    pcs = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs if f == "canopy.pc"]
    if len(pcs) != 1:
        sys.exit(f"expected one installed canopy.pc, found {pcs}")
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]), PKG_CONFIG_SYSROOT_DIR=dest)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "canopy"], check=True, env=env,
                           capture_output=True, text=True).stdout.split()
    # canopy.pc is the library's layers that compile code, random on transforms (with kernels).
    if "-lcanopy_random" not in flags or "-lcanopy" not in flags:
        sys.exit(f"canopy.pc gives {flags}")
    exe = os.path.join(build_dir, "installed_consumer_app")
    run(compiler + [os.path.join(here, "installed.cpp"), "-o", exe] + flags)
    libdirs = [f[2:] for f in flags if f.startswith("-L")]
    run([exe], env=dict(os.environ, LD_LIBRARY_PATH=":".join(libdirs)))
    # The training toolbox: canopy-train.pc alone (it requires canopy), linked with the run path
    # README gives for a prefix the loader does not search, and run without LD_LIBRARY_PATH.
    train_flags = subprocess.run(["pkg-config", "--cflags", "--libs", "canopy-train"], check=True, env=env,
                                 capture_output=True, text=True).stdout.split()
    if "-lcanopy_train" not in train_flags or "-lcanopy" not in train_flags:
        sys.exit(f"canopy-train.pc gives {train_flags}")
    train_libdirs = [f[2:] for f in train_flags if f.startswith("-L")]
    train_exe = os.path.join(build_dir, "installed_train_app")
    run(compiler + [os.path.join(here, "installed_train.cpp"), "-o", train_exe] + train_flags +
        [f"-Wl,-rpath,{d}" for d in train_libdirs])
    clean_env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    run([train_exe, os.path.join(build_dir, "installed_train_run")], env=clean_env)
else:
    sys.exit(f"unknown mode {mode}")
