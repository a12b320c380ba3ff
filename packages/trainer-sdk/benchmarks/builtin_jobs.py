"""What the fine-tuning benchmarks share: one BuiltinTrainer job through the platform, timed."""

from __future__ import annotations

import time
from pathlib import Path

from trainer_sdk import (
    BuiltinTrainer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    TorchTuneConfig,
    TrainerClient,
    TRLConfig,
    constants,
)


def run_builtin_job(
    client: TrainerClient,
    runtime: str,
    model: Path,
    data: Path,
    config: TRLConfig | TorchTuneConfig,
) -> tuple[float, str]:
    """Fine-tune ``model`` on ``data`` with ``config`` on ``runtime``: the seconds from submit to
    Complete and the job's name; RuntimeError unless it completes with an output."""
    started = time.monotonic()
    name = client.train(
        runtime=runtime,
        initializer=Initializer(
            model=HuggingFaceModelInitializer(str(model)),
            dataset=HuggingFaceDatasetInitializer(str(data)),
        ),
        trainer=BuiltinTrainer(config),
    )
    job = client.wait_for_job_status(name, timeout=1800, polling_interval=0.1)
    wall = time.monotonic() - started
    if job.status != constants.TRAINJOB_COMPLETE or job.output is None:
        raise RuntimeError(f"TrainJob {name}: {job.status} {job.message}")
    return wall, name
