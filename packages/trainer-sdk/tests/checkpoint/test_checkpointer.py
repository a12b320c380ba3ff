"""``Checkpointer`` in one process: what it saves and restores, async snapshots, bad input."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from torch import nn
from trainer_sdk import checkpoint
from trainer_sdk.checkpoint import _layout


def trained(
    seed: int = 0,
) -> tuple[nn.Module, torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    torch.manual_seed(seed)
    model = nn.Linear(4, 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for _ in range(2):
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        scheduler.step()
    return model, optimizer, scheduler


def test_restore_without_a_checkpoint_starts_at_zero(tmp_path: Path) -> None:
    model = nn.Linear(2, 2)
    with checkpoint.Checkpointer({"model": model}, directory=tmp_path) as ckpt:
        assert ckpt.restore() == 0
        assert ckpt.resumed_from is None
    assert checkpoint.read_resumes(tmp_path) == []


def test_restore_brings_back_every_part(tmp_path: Path) -> None:
    model, optimizer, scheduler = trained()
    extra = {"ema": torch.arange(3.0)}
    state = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "extra": extra}
    with checkpoint.Checkpointer(state, directory=tmp_path) as ckpt:
        random.seed(7)
        torch.manual_seed(7)
        ckpt.save(2)
    expected_draws = (random.random(), torch.rand(3))

    fresh_model = nn.Linear(4, 3)
    fresh_optimizer = torch.optim.Adam(fresh_model.parameters(), lr=0.1)
    fresh_scheduler = torch.optim.lr_scheduler.StepLR(fresh_optimizer, step_size=1, gamma=0.5)
    fresh_extra = {"ema": torch.zeros(3)}
    fresh = {
        "model": fresh_model,
        "optimizer": fresh_optimizer,
        "scheduler": fresh_scheduler,
        "extra": fresh_extra,
    }
    with checkpoint.Checkpointer(fresh, directory=tmp_path) as ckpt:
        assert ckpt.restore() == 2
        assert ckpt.resumed_from is not None and ckpt.resumed_from.step == 2
        assert (random.random(), *torch.rand(3).tolist()) == (
            expected_draws[0],
            *expected_draws[1].tolist(),
        )
    for name, tensor in model.state_dict().items():
        assert torch.equal(fresh_model.state_dict()[name], tensor), name
    for param, fresh_param in zip(model.parameters(), fresh_model.parameters(), strict=True):
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(optimizer.state[param][key], fresh_optimizer.state[fresh_param][key])
    assert fresh_scheduler.state_dict() == scheduler.state_dict()
    assert fresh_optimizer.param_groups[0]["lr"] == optimizer.param_groups[0]["lr"] == 0.025
    assert torch.equal(fresh_extra["ema"], torch.arange(3.0))
    assert [(r.step, r.attempt) for r in checkpoint.read_resumes(tmp_path)] == [(2, 0)]


def test_async_save_keeps_the_values_of_the_save_call(tmp_path: Path) -> None:
    """The copy runs in the background; the optimizer step waits for it (its pre-hook) and a
    module with buffers waits before its forward."""
    model = nn.Sequential(nn.Linear(1024, 1024), nn.BatchNorm1d(1024))
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model(torch.randn(8, 1024)).sum().backward()
    saved = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    state = {"model": model, "optimizer": optimizer}
    with checkpoint.Checkpointer(state, directory=tmp_path, async_save=True) as ckpt:
        ckpt.save(1)
        model(torch.randn(8, 1024))  # updates the batch-norm statistics
        optimizer.step()
        assert ckpt._staging is not None and ckpt._staging._staging is None  # a hook waited
        assert not torch.equal(next(model.parameters()), saved["0.weight"])
        assert _layout.latest(tmp_path) is None or _layout.latest(tmp_path).step == 1  # type: ignore[union-attr]
        ckpt.wait()
    found = checkpoint.latest(tmp_path)
    assert found is not None and found.step == 1
    restored = nn.Sequential(nn.Linear(1024, 1024), nn.BatchNorm1d(1024))
    with checkpoint.Checkpointer({"model": restored}, directory=tmp_path) as ckpt:
        assert ckpt.restore() == 1
    for name, tensor in saved.items():
        assert torch.equal(restored.state_dict()[name], tensor), name


def test_a_save_cut_short_is_skipped_and_then_removed(tmp_path: Path) -> None:
    model = nn.Linear(2, 2)
    with checkpoint.Checkpointer({"model": model}, directory=tmp_path) as ckpt:
        ckpt.save(5)
        partial = _layout.step_dir(tmp_path, 9)
        (partial / "tensors").mkdir(parents=True)
        (partial / "tensors" / "__0_0.distcp").write_bytes(b"torn")
        assert ckpt.restore() == 5
        ckpt.save(6)
    assert [c.step for c in checkpoint.checkpoints(tmp_path)] == [5, 6]
    assert not partial.exists()


def test_step_saves_every_n_and_keeps_the_last_k(tmp_path: Path) -> None:
    model = nn.Linear(2, 2)
    with checkpoint.Checkpointer(
        {"model": model}, directory=tmp_path, every=3, keep_last=2
    ) as ckpt:
        for step in range(1, 11):
            ckpt.step(step)
    assert [c.step for c in checkpoint.checkpoints(tmp_path)] == [6, 9]


def test_the_directory_comes_from_the_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(checkpoint.CHECKPOINT_DIR_ENV, str(tmp_path / "ckpt"))
    with checkpoint.Checkpointer({"model": nn.Linear(2, 2)}) as ckpt:
        ckpt.save(1)
    assert [c.step for c in checkpoint.checkpoints(tmp_path / "ckpt")] == [1]


@pytest.mark.parametrize(
    ("state", "options", "message"),
    [
        ({"model": nn.Linear(2, 2)}, {"every": 0}, "every: expected an integer >= 1"),
        ({"model": nn.Linear(2, 2)}, {"keep_last": "3"}, "keep_last: expected an integer >= 1"),
        ({"count": 3}, {}, "state['count']: expected an nn.Module"),
        ({}, {}, "state: expected a non-empty mapping"),
        ({"a.b": nn.Linear(2, 2)}, {}, "state: expected names without"),
        (
            {"optimizer": torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=1.0)},
            {},
            "state['optimizer']: an optimizer needs the module",
        ),
    ],
)
def test_bad_arguments_name_the_field(
    tmp_path: Path, state: dict[str, object], options: dict[str, object], message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message.replace("[", r"\[")):
        checkpoint.Checkpointer(state, directory=tmp_path, **options)  # type: ignore[arg-type]


def test_no_directory_anywhere_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(checkpoint.CHECKPOINT_DIR_ENV, raising=False)
    with pytest.raises(ValueError, match="TRAINER_CHECKPOINT_DIR is not set"):
        checkpoint.Checkpointer({"model": nn.Linear(2, 2)})


def test_a_bad_step_is_an_error(tmp_path: Path) -> None:
    ckpt = checkpoint.Checkpointer({"model": nn.Linear(2, 2)}, directory=tmp_path)
    with pytest.raises(ValueError, match="step: expected an integer >= 0"):
        ckpt.save(-1)


def test_a_missing_rank_part_names_the_file(tmp_path: Path) -> None:
    with checkpoint.Checkpointer({"model": nn.Linear(2, 2)}, directory=tmp_path) as ckpt:
        ckpt.save(1)
    _layout.rank_file(_layout.step_dir(tmp_path, 1), 0).unlink()
    ckpt = checkpoint.Checkpointer({"model": nn.Linear(2, 2)}, directory=tmp_path)
    with pytest.raises(checkpoint.CheckpointError, match=r"rank-00000\.pt: this rank's part"):
        ckpt.restore()
