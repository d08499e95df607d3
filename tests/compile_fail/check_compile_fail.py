#!/usr/bin/env python3
"""Passes when compiling SOURCE fails and the diagnostics contain EXPECTED (a compile-fail test)."""
import subprocess
import sys

source, expected, sep, *compiler = sys.argv[1:]
assert sep == "--", "usage: check_compile_fail.py SOURCE EXPECTED -- COMPILER ARGS..."
result = subprocess.run(compiler + [source], capture_output=True, text=True)
if result.returncode == 0:
    sys.exit(f"{source} compiled, but it must not")
if expected not in result.stderr:
    sys.exit(f"{source} failed to compile without the expected message {expected!r}:\n{result.stderr[-4000:]}")
print(f"{source}: fails as expected ({expected!r})")
