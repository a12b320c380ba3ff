"""Where a BuiltinTrainer job's model is, as each backend names it."""

from __future__ import annotations

from trainer_runtime import builtin_runtimes
from trainer_sdk.status.outputs import cluster_output, is_builtin, output_in
from trainer_sdk.status.runtimes import runtime_from_manifest
from trainer_sdk.types import TrainerType


def test_the_trl_runtimes_take_a_builtin_trainer_and_say_where_the_model_goes() -> None:
    for name in ("trl-cpu", "trl-gpu"):
        runtime = builtin_runtimes()[name].to_dict()
        seen = runtime_from_manifest(runtime)
        assert (seen.trainer.trainer_type, seen.trainer.framework) == (
            TrainerType.BUILTIN_TRAINER,
            "trl",
        )
        assert seen.trainer.command[:4] == ("torchrun", "-m", "trainer_sdk.training.engines", "trl")
        assert is_builtin(runtime)
        # JobSet names a shared claim of a volume claim template <template>-<JobSet>.
        assert cluster_output("job", runtime) == "pvc://initializer-job/output"


def test_a_custom_trainer_runtime_has_no_output() -> None:
    runtime = builtin_runtimes()["torch-distributed"].to_dict()
    assert not is_builtin(runtime) and cluster_output("job", runtime) is None


def test_the_output_is_found_in_the_mount_that_holds_it() -> None:
    mounts = [("/checkpoints", "ckpt"), ("/workspace", "initializer")]
    assert output_in(mounts) == ("initializer", "output")
    assert output_in([("/workspace/output", "out")]) == ("out", "")
    assert output_in([("/workspace/out", "x")]) is None
