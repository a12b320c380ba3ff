"""Where a ``DataLoader`` is in its epochs, saved and restored by the ``Checkpointer``.

With workers, the sampler runs ahead of the training loop (prefetching), so neither the dataset
nor the sampler knows what was trained on. ``DataPosition`` counts the batches it hands to the
loop; ``ResumableSampler`` (torch's ``DistributedSampler``: one shuffle per epoch from a seed,
sharded by rank) starts an epoch after the indices of those batches::

    sampler = checkpoint.ResumableSampler(dataset, shuffle=True, seed=0)
    data = checkpoint.DataPosition(DataLoader(dataset, batch_size=32, sampler=sampler,
                                              num_workers=2))
    state = {"model": model, "optimizer": optimizer, "data": data}
    ckpt = checkpoint.Checkpointer(state, every=100)
    step = ckpt.restore()
    while step < total_steps:
        for batch in data:  # the rest of the current epoch
            ...
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

__all__ = ["DataPosition", "ResumableSampler"]


class ResumableSampler(DistributedSampler[int]):
    """``DistributedSampler`` (its ``shuffle``, ``seed``, ``drop_last``; ranks from the default
    process group, or one replica without it) whose epoch can start after ``start`` indices."""

    def __init__(
        self,
        dataset: Dataset[Any],
        *,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        num_replicas: int | None = None,
        rank: int | None = None,
    ) -> None:
        if num_replicas is None and not (dist.is_available() and dist.is_initialized()):
            num_replicas, rank = 1, 0
        super().__init__(
            dataset,
            num_replicas=num_replicas,
            rank=rank,
            shuffle=shuffle,
            seed=seed,
            drop_last=drop_last,
        )
        self.start = 0

    def __iter__(self) -> Iterator[int]:
        return itertools.islice(super().__iter__(), self.start, None)

    def __len__(self) -> int:
        return max(0, super().__len__() - self.start)


class DataPosition:
    """A ``DataLoader`` over a ``ResumableSampler``, with its position (epoch, batches handed to
    the training loop) as a state the ``Checkpointer`` saves per rank. Iterating it yields the
    rest of the current epoch, then moves to the next one."""

    def __init__(self, loader: DataLoader[Any]) -> None:
        sampler = loader.sampler
        if not isinstance(sampler, ResumableSampler):
            raise TypeError(
                "loader: expected a DataLoader with sampler=checkpoint.ResumableSampler(...), "
                f"got a {type(sampler).__name__}"
            )
        if loader.batch_size is None:
            raise TypeError("loader: expected a batch_size (a batch_sampler cannot be resumed)")
        self.loader = loader
        self.sampler = sampler
        self.batch_size: int = loader.batch_size
        self.epoch = 0
        self.batches = 0

    def __iter__(self) -> Iterator[Any]:
        self.sampler.set_epoch(self.epoch)
        self.sampler.start = self.batches * self.batch_size
        for batch in self.loader:
            self.batches += 1  # handed to the loop: trained on once its step is checkpointed
            yield batch
        self.epoch += 1
        self.batches = 0

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "batches": self.batches}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.epoch, self.batches = int(state["epoch"]), int(state["batches"])
