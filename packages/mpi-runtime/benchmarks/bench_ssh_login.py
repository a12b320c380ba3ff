"""Time of one ssh login to a loopback worker: as mpirun's ssh logs in before each MPI daemon.

    python packages/mpi-runtime/benchmarks/bench_ssh_login.py [--repeats N]

A real sshd (``mpi-worker``) on 127.0.0.2 with a generated key; ``ssh HOST true`` with the
launcher's client config, plain against ``SetEnv SHLVL=1`` (what ``mpi-launch --loopback`` sends:
bash then skips ``~/.bashrc``), interleaved so that machine load hits both alike. The table shows
the median and best of N logins and the ratio to the plain login.
"""

from __future__ import annotations

import argparse
import os
import pwd
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_launch import time_once  # this directory: the same timing as the launch benchmark
from mpi_runtime import (
    SSH_PRIVATE_KEY_FILE,
    generate_ssh_keypair,
    private_identity,
    ssh_client_config,
    wait_for_hosts,
    write_ssh_auth,
)

HOST = "127.0.0.2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        ssh_dir = root / "ssh"
        write_ssh_auth(ssh_dir, generate_ssh_keypair())
        with socket.socket() as probe:
            probe.bind((HOST, 0))
            port = int(probe.getsockname()[1])
        worker = subprocess.Popen(
            [sys.executable, "-m", "mpi_runtime.workers", "--ssh-dir", str(ssh_dir),
             "--port", str(port), "--listen", HOST, "--state-dir", str(root / "sshd")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_for_hosts([HOST], port, 30.0)
            identity = private_identity(ssh_dir / SSH_PRIVATE_KEY_FILE, root)
            runs = {}
            for name, set_env in [("plain login", None), ("SetEnv SHLVL=1", {"SHLVL": "1"})]:
                config = root / f"ssh_config-{len(runs)}"
                config.write_text(
                    ssh_client_config(port=port, identity_file=identity, set_env=set_env)
                )
                runs[name] = ["ssh", "-F", str(config), HOST, "true"]
            for argv in runs.values():  # warm up once each
                time_once(argv)
            times: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(args.repeats):
                for name, argv in runs.items():
                    times[name].append(time_once(argv))
        finally:
            worker.terminate()
            worker.wait(timeout=10)
    baseline = statistics.median(times["plain login"])
    user = pwd.getpwuid(os.geteuid()).pw_name
    print(f"ssh {HOST} true as {user}, {args.repeats} logins each, load {os.getloadavg()[0]:.1f}")
    print(f"{'client config':<20}{'median s':>10}{'best s':>10}{'ratio':>8}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<20}{median:>10.3f}{min(values):>10.3f}{median / baseline:>8.2f}")


if __name__ == "__main__":
    main()
