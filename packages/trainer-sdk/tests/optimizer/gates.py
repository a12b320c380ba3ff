"""What a trial's training function imports to gate its steps on the optimizer, not on time.

A trial function puts this folder on ``sys.path`` (it is given the path) and calls
``wait_until_recorded`` after reporting each step: it goes on once the optimizer's driver has
recorded that step, which is the pass that also judged it for early stopping, so a pruned trial
is stopped part way on a loaded machine as on an idle one.
"""

from __future__ import annotations

import os
import time

from trainer_sdk import LocalBackendConfig
from trainer_sdk.optimizer import OptimizerClient
from trainer_sdk.optimizer.constants import constants

WAIT_SECONDS = 120.0
POLL_SECONDS = 0.05


def _this_trial(optimizer: OptimizerClient) -> tuple[str, str]:
    """(job, trial) names of the trial whose parameters this process's env holds."""
    mine = {
        name[len("KUBEFLOW_TRAINER_OPT_") :].lower(): value
        for name, value in os.environ.items()
        if name.startswith("KUBEFLOW_TRAINER_OPT_")
    }
    for job in optimizer.list_jobs():
        if job.status in (constants.OPTIMIZATION_JOB_COMPLETE, constants.OPTIMIZATION_JOB_FAILED):
            continue
        for trial in job.trials:
            if {k.lower(): v for k, v in trial.parameters.items()} == mine:
                return job.name, trial.name
    raise LookupError(f"no running optimization job has a trial with parameters {mine}")


def wait_until_recorded(root: str, step: int) -> None:
    """Return once the optimizer under ``root`` has recorded this trial's ``step``;
    TimeoutError after ``WAIT_SECONDS``."""
    optimizer = OptimizerClient(LocalBackendConfig(root=root))
    job, trial = _this_trial(optimizer)
    deadline = time.monotonic() + WAIT_SECONDS
    while step not in optimizer.backend.trial_histories(job).get(trial, {}):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{trial}: step {step} was not recorded in {WAIT_SECONDS} s")
        time.sleep(POLL_SECONDS)
