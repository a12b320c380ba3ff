"""``python -m mpi_runtime launch|worker ARGS``: the ``mpi-launch`` and ``mpi-worker`` commands."""

import sys

from mpi_runtime import launches, workers
from mpi_runtime._versions import package_version

USAGE = "usage: python -m mpi_runtime {launch,worker} [--help] ARGS"
command, arguments = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
if command == "launch":
    sys.exit(launches.main(arguments))
elif command == "worker":
    workers.main(arguments)
elif command == "--version":
    print(f"mpi-runtime {package_version()}")
else:
    sys.exit(f"{USAGE}\n(mpi-launch is `launch`, mpi-worker is `worker`)")
