"""The package loads its names on first use, and ``mpi-launch`` imports only what a launch needs:
what it imports before it starts mpirun is most of its cost over bare mpirun (README)."""

import importlib
import subprocess
import sys

import mpi_runtime

# Each of these cost mpi-launch milliseconds at every start (importlib.metadata alone ~30 ms,
# dataclasses with inspect ~9 ms); none is needed to run mpirun on this machine.
_NOT_FOR_A_LOCAL_LAUNCH = {
    "importlib.metadata",
    "dataclasses",
    "inspect",
    "tempfile",
    "shutil",
    "secrets",
    "hashlib",
    "cryptography",
}


def test_every_public_name_is_its_submodules_object() -> None:
    for module, names in mpi_runtime._EXPORTS.items():
        submodule = importlib.import_module(f"mpi_runtime.{module}")
        for name in names:
            assert getattr(mpi_runtime, name) is getattr(submodule, name), name
    assert {name for names in mpi_runtime._EXPORTS.values() for name in names} == set(
        mpi_runtime.__all__
    ) - {"__version__"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    assert not hasattr(mpi_runtime, "no_such_name")


def test_mpi_launch_imports_only_what_a_local_launch_needs() -> None:
    code = "import sys\nfrom mpi_runtime.launches import main\nprint(' '.join(sys.modules))\n"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(result.stdout.split())
    assert "mpi_runtime.launches" in loaded
    assert loaded & _NOT_FOR_A_LOCAL_LAUNCH == set()
