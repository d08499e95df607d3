#!/usr/bin/env python3
"""Runs a test program under `mpirun -np N` the way the suite can: as root when it must
(Open MPI refuses root without its two opt-in variables), oversubscribed (2 processes x 2 devices
on 2 cores), over shared memory on this machine only. Usage: run_mpi.py MPIRUN N PROGRAM [ARGS]."""
import os
import subprocess
import sys


def main() -> int:
    mpirun, n, program, *args = sys.argv[1:]
    env = dict(os.environ)
    env.update({
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "CANOPY_CPU_DEVICES": env.get("CANOPY_CPU_DEVICES", "2"),
        "CANOPY_COLLECTIVE_TIMEOUT_S": env.get("CANOPY_COLLECTIVE_TIMEOUT_S", "60"),
        # Containers often forbid the cross-process memory attach vader tries first.
        "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
        "OMPI_MCA_btl": "self,vader",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
    })
    cmd = [mpirun, "-np", n, "-x", "CANOPY_CPU_DEVICES", "-x", "CANOPY_COLLECTIVE_TIMEOUT_S", program, *args]
    try:
        return subprocess.run(cmd, env=env, timeout=600).returncode
    except subprocess.TimeoutExpired:
        print("run_mpi.py: mpirun did not finish in 600 s", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
