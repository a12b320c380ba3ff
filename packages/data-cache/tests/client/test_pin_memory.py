"""The ``pin_memory`` path for GPU training: what CPU-only torch can check, and what needs a GPU.

On a machine with an accelerator, the tests pin the tensors of received (unaligned) batches
and copy them to the device without blocking; on CPU-only torch they check the documented
fall-back: ``DataLoader(pin_memory=True)`` warns once and yields the same, unpinned batches,
and ``Tensor.pin_memory()`` itself raises.
"""

from __future__ import annotations

import multiprocessing
import warnings
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pytest
import torch
from torch.utils.data import DataLoader
from trainer_data_cache import CacheDataset

Push = Callable[[str, str, pa.Table], None]
ROWS = 777
BATCH = 64
HAS_ACCELERATOR = torch.accelerator.is_available()
needs_accelerator = pytest.mark.skipif(
    not HAS_ACCELERATOR, reason="pinned memory needs an accelerator; this torch has none"
)
multiprocessing.set_forkserver_preload(["torch", "trainer_data_cache"])


@pytest.fixture(scope="module")
def endpoint(remote_cache: str, push: Push, table_of: Callable[[int], pa.Table]) -> str:
    push(remote_cache, "pinned", table_of(ROWS))
    return remote_cache


def _loader(endpoint: str, workers: int, pin: bool) -> DataLoader[dict[str, torch.Tensor]]:
    dataset = CacheDataset(endpoint, "pinned", columns=["id", "vector"], batch_rows=BATCH)
    context = multiprocessing.get_context("forkserver") if workers else None
    return DataLoader(
        dataset,
        batch_size=None,
        num_workers=workers,
        pin_memory=pin,
        multiprocessing_context=context,
    )


@pytest.mark.parametrize("workers", [0, 2], ids=["no-workers", "two-workers"])
def test_a_pinning_loader_yields_every_row_once(endpoint: str, workers: int) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pinned = list(_loader(endpoint, workers, pin=True))
    ids = torch.cat([batch["id"] for batch in pinned])  # workers take turns: sort
    assert torch.equal(ids.sort().values, torch.arange(ROWS))
    for batch in pinned:  # row i's vector is 4i .. 4i + 3
        expected = batch["id"].numpy().astype(np.float64)[:, None] * 4 + np.arange(4)
        assert np.array_equal(batch["vector"].double().numpy(), expected)
    if HAS_ACCELERATOR:
        assert all(t.is_pinned() for batch in pinned for t in batch.values())
        device = torch.accelerator.current_accelerator()
        moved = [batch["id"].to(device, non_blocking=True) for batch in pinned]
        assert torch.equal(torch.cat(moved).cpu(), ids)
    else:  # the documented fall-back: one warning, batches as they are
        assert any("no accelerator is found" in str(w.message) for w in caught)
        assert not any(t.is_pinned() for batch in pinned for t in batch.values())


@pytest.mark.skipif(HAS_ACCELERATOR, reason="checks CPU-only torch's behaviour")
def test_without_an_accelerator_pinning_a_tensor_raises(endpoint: str) -> None:
    batch = next(iter(_loader(endpoint, 0, pin=False)))
    with pytest.raises(RuntimeError, match="accelerator"):
        batch["vector"].pin_memory()


@needs_accelerator
def test_received_tensors_pin_and_reach_the_device_unchanged(endpoint: str) -> None:
    device = torch.accelerator.current_accelerator()
    for batch in _loader(endpoint, 0, pin=False):
        for tensor in batch.values():
            pinned = tensor.pin_memory()
            assert pinned.is_pinned() and torch.equal(pinned, tensor)
            on_device = pinned.to(device, non_blocking=True)
            assert torch.equal(on_device.cpu().double(), tensor.double())
