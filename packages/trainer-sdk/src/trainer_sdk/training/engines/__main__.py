"""``python -m trainer_sdk.training.engines NAME ARGS...``: run an engine's pod side, then end
the process as every rank of the platform ends (``rank_entrypoint.finish``: no interpreter
finalization for gloo's worker threads to race with)."""

from __future__ import annotations

import sys
import traceback

from trainer_sdk.training.engines import ENGINES, engine_named
from trainer_sdk.training.rank_entrypoint import exit_code, finish


def main(argv: list[str]) -> int:
    """Run engine ``argv[0]`` with the rest of ``argv``; 2 with the usage for an unknown one."""
    engine = engine_named(argv[0]) if argv else None
    if engine is None:
        names = "|".join(engine.name for engine in ENGINES)
        print(f"usage: python -m trainer_sdk.training.engines {{{names}}} ARGS...", file=sys.stderr)
        return 2
    return engine.run(argv[1:])


if __name__ == "__main__":
    try:
        status = main(sys.argv[1:])
    except SystemExit as error:
        status = exit_code(error)
    except BaseException:
        traceback.print_exc()
        status = 1
    finish(status)
