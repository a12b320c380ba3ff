"""``python -m trainer_sdk.training.engines NAME ARGS...``: run an engine's pod side."""

from __future__ import annotations

import sys

from trainer_sdk.training.engines import ENGINES, engine_named


def main(argv: list[str]) -> int:
    """Run engine ``argv[0]`` with the rest of ``argv``; 2 with the usage for an unknown one."""
    engine = engine_named(argv[0]) if argv else None
    if engine is None:
        names = "|".join(engine.name for engine in ENGINES)
        print(f"usage: python -m trainer_sdk.training.engines {{{names}}} ARGS...", file=sys.stderr)
        return 2
    return engine.run(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
