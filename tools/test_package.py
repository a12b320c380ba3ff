"""One package's tests with pytest options: ``hatch run test-package NAME [PYTEST ARGS...]``.

``pytest packages/{args}/tests`` put every option inside the path (``packages/trainer-sdk -m not
e2e/tests``); here the first argument names the package and the rest go to pytest as they are.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    """pytest's exit status for ``packages/NAME/tests`` run with the remaining arguments."""
    packages = sorted(path.parent.name for path in (ROOT / "packages").glob("*/tests"))
    if not argv or argv[0] not in packages:
        given = repr(argv[0]) if argv else "nothing"
        print(
            f"usage: test-package NAME [PYTEST ARGS...]; NAME: one of {', '.join(packages)}, "
            f"got {given}",
            file=sys.stderr,
        )
        return 2
    return int(pytest.main([str(ROOT / "packages" / argv[0] / "tests"), *argv[1:]]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
