"""``DataPosition`` and ``ResumableSampler``: a shuffled ``DataLoader`` with workers resumes at
the batch after the checkpoint, so a run cut short and resumed trains on exactly the batches of
an uninterrupted one."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler
from trainer_sdk import checkpoint

ITEMS = 30
BATCH = 4
STEPS = 20  # 8 batches an epoch (the last one of 2): two and a half epochs


class Numbers(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return ITEMS

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(index)


def train(directory: Path, every: int, stop_after: int = STEPS) -> list[tuple[int, list[int]]]:
    """(step, batch) for each step this run trains, from the checkpoint it restores to
    ``stop_after`` (a run that dies there)."""
    sampler = checkpoint.ResumableSampler(Numbers(), shuffle=True, seed=3)
    data = checkpoint.DataPosition(
        DataLoader(Numbers(), batch_size=BATCH, sampler=sampler, num_workers=2)
    )
    trained = []
    with checkpoint.Checkpointer({"data": data}, directory=directory, every=every) as ckpt:
        step = ckpt.restore()
        while step < stop_after:
            for batch in data:
                step += 1
                trained.append((step, batch.tolist()))
                ckpt.step(step)
                if step == stop_after:
                    break
    return trained


@pytest.mark.parametrize(
    ("every", "stop_after"),
    [
        pytest.param(5, 13, id="mid-epoch"),
        pytest.param(8, 11, id="at-an-epoch-end"),
        pytest.param(3, 17, id="second-epoch"),
    ],
)
def test_a_resumed_loader_trains_on_the_batches_of_an_uninterrupted_run(
    tmp_path: Path, every: int, stop_after: int
) -> None:
    reference = train(tmp_path / "reference", every)
    epochs = [sorted(i for _, batch in reference[e * 8 : e * 8 + 8] for i in batch) for e in (0, 1)]
    assert epochs == [list(range(ITEMS))] * 2  # each epoch: every item once
    assert reference[:8] != reference[8:16]  # shuffled again each epoch
    first = train(tmp_path / "ckpt", every, stop_after)
    resumed_from = stop_after - stop_after % every
    resumed = train(tmp_path / "ckpt", every)
    assert resumed[0][0] == resumed_from + 1
    assert [entry for entry in first if entry[0] <= resumed_from] + resumed == reference


def test_a_loader_without_a_resumable_sampler_is_refused() -> None:
    loader = DataLoader(Numbers(), batch_size=BATCH, sampler=RandomSampler(Numbers()))
    with pytest.raises(TypeError, match=r"sampler=checkpoint\.ResumableSampler"):
        checkpoint.DataPosition(loader)
