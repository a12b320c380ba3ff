"""The local backend's ``tune``: ``tune run RECIPE.py`` as torchrun arguments for the local
torchrun (one interpreter per node), anything else left to torchtune's CLI."""

from __future__ import annotations

import pytest
from trainer_sdk.training.engines.torchtune.local_tune import torchrun_arguments

RECIPE = "trainer_sdk/training/engines/torchtune/recipe.py"
MODULE = "trainer_sdk.training.engines.torchtune.recipe"
TAIL = ["-m", MODULE]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(
            ["run", RECIPE, "--config", "llama3_2/1B_lora", "epochs=1"],
            ["-m", MODULE, "--config", "llama3_2/1B_lora", "epochs=1"],
            id="one-process",
        ),
        pytest.param(
            ["run", "--rdzv_endpoint=job-0.job:29500", RECIPE, "--config", "c"],
            ["--master_addr=job-0.job", "--master_port=29500", "-m", MODULE, "--config", "c"],
            id="the-runtimes-endpoint-is-the-static-rendezvous",
        ),
        pytest.param(
            ["run", "--nnodes", "1", "--nproc_per_node", "2", "--rdzv_endpoint", "h:1", RECIPE],
            ["--nnodes", "1", "--nproc_per_node", "2", "--master_addr=h", "--master_port=1", *TAIL],
            id="torchruns-options-kept",
        ),
        pytest.param(["run", "lora_finetune_single_device", "--config", "c"], None, id="built-in"),
        pytest.param(["ls"], None, id="another-subcommand"),
        pytest.param(["run", "--config", "x.py"], None, id="no-recipe"),
    ],
)
def test_tune_run_of_a_recipe_file_is_torchruns_launch_of_its_module(
    argv: list[str], expected: list[str] | None
) -> None:
    assert torchrun_arguments(argv) == expected
