"""An engine's own environment beside the workspace's: ``python tools/engine_env.py ENGINE PATH``.

Fine-tuning engines pin libraries that cannot share one environment (torchtune 0.6.1 imports only
with torchao 0.15, which the PEFT that TRL needs refuses). This makes a virtual environment at
PATH that sees every package of the environment running this script (the workspace: torch, the
trainer packages, installed editable) behind its own, and installs there what trainer-sdk's extra
ENGINE adds, as its pyproject pins them. Its ``bin/python`` is the interpreter local jobs of that
engine run on: ``LocalBackendConfig(python=PATH/bin/python)``.
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


def create(extra: str, path: Path) -> None:
    """The environment at ``path``: the workspace's packages visible, the extra's installed."""
    requirements = extra_requirements(extra)
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    python = path / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # A .pth line that imports runs at start-up: the workspace's site directory, with its own
    # .pth files (the editable installs), goes on the path after this environment's.
    workspace = site.getsitepackages()[0]
    (Path(own) / "_workspace.pth").write_text(f"import site; site.addsitedir({workspace!r})\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], check=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: engine_env.py ENGINE PATH", file=sys.stderr)
        return 2
    create(argv[0], Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
