"""An engine's own environment beside the workspace's:

    python tools/engine_env.py ENGINE PATH COMMAND     (hatch run torchtune-env)

Fine-tuning engines pin libraries that cannot share one environment (torchtune 0.6.1 imports only
with torchao 0.15, which the PEFT that TRL needs refuses). This makes a virtual environment at
PATH that sees every package of the environment running this script (the workspace: torch, the
trainer packages, installed editable) behind its own, and installs there what trainer-sdk's extra
ENGINE adds, as its pyproject pins them. Its ``bin/python`` is the interpreter local jobs of that
engine run on: ``LocalBackendConfig(python=PATH/bin/python)``. An environment that has the
engine's COMMAND (``tune``) and sees this workspace is kept; any other is made again.
"""

from __future__ import annotations

import site
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SDK_PYPROJECT = ROOT / "packages" / "trainer-sdk" / "pyproject.toml"


def extra_requirements(extra: str, pyproject: Path = SDK_PYPROJECT) -> list[str]:
    """The requirements trainer-sdk's ``extra`` adds; ValueError naming the extras there are."""
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    if extra not in extras:
        raise ValueError(f"extra {extra!r}: trainer-sdk has {sorted(extras)}")
    return list(extras[extra])


def workspace_line() -> str:
    """The .pth line that puts this environment's site directory, with its own .pth files (the
    editable installs), on the engine environment's path after its own packages."""
    return f"import site; site.addsitedir({site.getsitepackages()[0]!r})\n"


def site_packages(python: Path) -> Path:
    found = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(found.stdout.strip())


def is_current(path: Path, command: str) -> bool:
    """Whether the environment at ``path`` has ``command`` and sees this workspace."""
    python = path / "bin" / "python"
    if not (path / "bin" / command).is_file() or not python.is_file():
        return False
    line = site_packages(python) / "_workspace.pth"
    return line.is_file() and line.read_text() == workspace_line()


def create(extra: str, path: Path) -> None:
    """The environment at ``path``: the workspace's packages visible, the extra's installed."""
    requirements = extra_requirements(extra)
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    python = path / "bin" / "python"
    (site_packages(python) / "_workspace.pth").write_text(workspace_line())
    subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], check=True)


def ensure(extra: str, path: Path, command: str) -> Path:
    """The environment's python, made unless it is there, with ``command``, seeing this
    workspace."""
    if not is_current(path, command):
        create(extra, path)
    return path / "bin" / "python"


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: engine_env.py ENGINE PATH COMMAND", file=sys.stderr)
        return 2
    ensure(argv[0], Path(argv[1]), argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
