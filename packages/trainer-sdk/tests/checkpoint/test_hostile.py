"""A checkpoint directory that others can write (a shared claim): torn or foreign commit markers,
files that would run code when unpickled, a damaged latest checkpoint, symbolic links. Each is
skipped or refused, never executed, and the newest intact checkpoint is restored."""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.state_dict_saver import save as dcp_save
from trainer_sdk import checkpoint
from trainer_sdk.checkpoint import _layout


class RunsCode:
    """Unpickling it creates the file ``path``: the proof that a load ran code."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (exec, (f"open({str(self.path)!r}, 'w').write('ran')",))


def saved(directory: Path, step: int, value: float) -> dict[str, torch.Tensor]:
    """A checkpoint of step ``step`` whose model's parameters are all ``value``."""
    model = nn.Linear(3, 2)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(value)
    with checkpoint.Checkpointer({"model": model}, directory=directory) as ckpt:
        ckpt.save(step)
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


def restored(directory: Path) -> tuple[int, dict[str, torch.Tensor]]:
    model = nn.Linear(3, 2)
    with checkpoint.Checkpointer({"model": model}, directory=directory) as ckpt:
        step = ckpt.restore()
    return step, model.state_dict()


def attempt(function: Callable[[], Any]) -> Any:
    """What ``function`` returned, or the exception it raised (so that a test checks first
    whether code ran, whatever the load did next)."""
    try:
        return function()
    except (Exception, CheckpointException) as error:  # DCP's is a BaseException
        return error


def marker(step: int) -> str:
    return f'{{"step": {step}, "saved_at": 1.0, "world_size": 1, "attempt": 0}}'


def write_marker(path: Path, kind: str) -> None:
    """A commit marker of one broken kind in the step directory ``path``."""
    target = path / _layout.COMMIT_MARKER
    if kind == "directory":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "link":
        target.symlink_to(path.parent / "elsewhere")
    else:
        target.write_text(
            {
                "empty": "",
                "torn": '{"step": 5, "saved_',
                "missing-key": '{"step": 5}',
                "a-list": "[5]",
                "another-step": marker(4),
                "not-finite": marker(5).replace("1.0", "NaN"),
                "negative-world": marker(5).replace('"world_size": 1', '"world_size": -1'),
                "binary": "\udcff".encode(errors="surrogateescape").decode(errors="replace"),
            }[kind]
        )


BROKEN_MARKERS = [
    "empty",
    "torn",
    "missing-key",
    "a-list",
    "another-step",
    "not-finite",
    "negative-world",
    "binary",
    "directory",
    "fifo",
    "link",
]


@pytest.mark.parametrize("kind", BROKEN_MARKERS)
def test_a_broken_marker_in_an_old_step_is_skipped_and_removed_by_the_next_save(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    expected = saved(tmp_path, 10, 0.5)
    broken = _layout.step_dir(tmp_path, 5)
    broken.mkdir()
    write_marker(broken, kind)
    with caplog.at_level(logging.WARNING):
        assert [c.step for c in checkpoint.checkpoints(tmp_path)] == [10]
        found = checkpoint.latest(tmp_path)
    assert found is not None and found.step == 10
    assert str(broken / _layout.COMMIT_MARKER) in caplog.text
    step, state = restored(tmp_path)
    assert step == 10 and all(torch.equal(state[k], v) for k, v in expected.items())
    saved(tmp_path, 11, 0.25)  # the next save prunes it and keeps working
    assert not broken.exists()
    assert [c.step for c in checkpoint.checkpoints(tmp_path)] == [10, 11]


def test_a_rank_part_that_would_run_code_is_refused(tmp_path: Path) -> None:
    expected = saved(tmp_path, 1, 0.5)
    saved(tmp_path, 2, 0.75)
    proof = tmp_path / "ran"
    part = _layout.rank_file(_layout.step_dir(tmp_path, 2), 0)
    torch.save({"rng": {}, "objects": {"x": RunsCode(proof)}}, part)
    result = attempt(lambda: restored(tmp_path))
    assert not proof.exists(), "restoring ran code from the checkpoint"
    step, state = result
    assert step == 1 and all(torch.equal(state[k], v) for k, v in expected.items())


def test_dcp_metadata_that_would_run_code_is_refused(tmp_path: Path) -> None:
    saved(tmp_path, 1, 0.5)
    proof = tmp_path / "ran"
    metadata = _layout.step_dir(tmp_path, 1) / "tensors" / ".metadata"
    metadata.write_bytes(pickle.dumps(RunsCode(proof)))
    result = attempt(lambda: restored(tmp_path))
    assert not proof.exists(), "restoring ran code from the checkpoint"
    assert isinstance(result, checkpoint.CheckpointError)
    assert "builtins.exec is not part of a checkpoint's metadata" in str(result)


def test_a_dcp_value_that_would_run_code_is_refused(tmp_path: Path) -> None:
    proof = tmp_path / "ran"
    path = _layout.step_dir(tmp_path, 3)
    with checkpoint.Checkpointer({"extra": {"count": 1}}, directory=tmp_path) as ckpt:
        ckpt.save(3)
    # The same step rewritten by someone else: a pickled object where a plain value was.
    dcp_save({"extra": {"count": RunsCode(proof)}}, checkpoint_id=path / "tensors", no_dist=True)
    with checkpoint.Checkpointer({"extra": {"count": 0}}, directory=tmp_path) as ckpt:
        result = attempt(ckpt.restore)
    assert not proof.exists(), "restoring ran code from the checkpoint"
    assert isinstance(result, checkpoint.CheckpointError) and "step 3" in str(result)


def test_saving_an_object_that_needs_pickle_names_it(tmp_path: Path) -> None:
    class Position:
        def state_dict(self) -> dict[str, Any]:
            return {"where": Path("/data")}

        def load_state_dict(self, state: dict[str, Any]) -> None:
            pass

    with (
        checkpoint.Checkpointer({"data": Position()}, directory=tmp_path) as ckpt,
        pytest.raises(TypeError, match=r"state\['data'\].state_dict\(\)\['where'\]: a pathlib"),
    ):
        ckpt.save(1)
    assert checkpoint.checkpoints(tmp_path) == []


@pytest.mark.parametrize("damage", ["truncated-tensors", "empty-metadata", "rank-part", "fifo"])
def test_a_damaged_latest_checkpoint_falls_back_to_the_one_before(
    tmp_path: Path, damage: str
) -> None:
    expected = saved(tmp_path, 4, 0.5)
    saved(tmp_path, 8, 0.75)
    latest = _layout.step_dir(tmp_path, 8)
    tensors = next((latest / "tensors").glob("*.distcp"))
    if damage == "truncated-tensors":
        tensors.write_bytes(tensors.read_bytes()[:10])
    elif damage == "empty-metadata":
        (latest / "tensors" / ".metadata").write_bytes(b"")
    elif damage == "rank-part":
        _layout.rank_file(latest, 0).write_bytes(b"PK\x03\x04 not a zip")
    else:  # a reader would block on it forever
        tensors.unlink()
        os.mkfifo(tensors)
    step, state = restored(tmp_path)
    assert step == 4 and all(torch.equal(state[k], v) for k, v in expected.items())


def test_no_loadable_checkpoint_names_each_and_why(tmp_path: Path) -> None:
    saved(tmp_path, 4, 0.5)
    saved(tmp_path, 8, 0.75)
    for step in (4, 8):
        _layout.rank_file(_layout.step_dir(tmp_path, step), 0).write_bytes(b"")
    with pytest.raises(checkpoint.CheckpointError) as raised:
        restored(tmp_path)
    message = str(raised.value)
    assert "no checkpoint under" in message and "step 8 (" in message and "step 4 (" in message


def test_symbolic_links_named_like_steps_are_neither_followed_nor_break_saves(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    saved(elsewhere, 7, 0.5)  # a complete checkpoint, outside this directory
    directory = tmp_path / "ckpt"
    directory.mkdir()
    (directory / _layout.step_dir(directory, 7).name).symlink_to(_layout.step_dir(elsewhere, 7))
    (directory / _layout.step_dir(directory, 99).name).symlink_to(_layout.step_dir(elsewhere, 7))
    assert checkpoint.latest(directory) is None
    model = nn.Linear(3, 2)
    with checkpoint.Checkpointer({"model": model}, directory=directory, keep_last=1) as ckpt:
        assert ckpt.restore() == 0
        ckpt.save(7)  # where a link was: the link goes, its target stays
        ckpt.save(8)
    assert [c.step for c in checkpoint.checkpoints(directory)] == [8]
    assert (directory / _layout.step_dir(directory, 99).name).is_symlink()
    assert [c.step for c in checkpoint.checkpoints(elsewhere)] == [7]
