"""What a checkpoint's files may hold, and how they are read without running code.

A checkpoint directory can be written by anyone who can write the volume (another job on a shared
claim, a copy from elsewhere), so nothing read from it may execute code:

- each rank's part is read with ``torch.load(weights_only=True)``; it holds only plain values
  (``check_plain`` refuses anything else when it is saved, naming where);
- DCP's ``.metadata`` is a pickle: ``SafeReader`` reads it with an unpickler that knows only the
  classes DCP's metadata is made of (its dataclasses, ``torch.Size``, dtypes, layouts, paths),
  and the non-tensor values of the DCP state (optimizer hyperparameters, plain values in tensor
  mappings) are read with ``weights_only=True`` (``SafePlanner``), where DCP's defaults unpickle
  both freely;
- every entry of a checkpoint is a plain file or directory (``check_entries``): a symbolic link,
  FIFO or device in it is refused before anything is opened (a FIFO would block a reader forever).

A DeepSpeed engine's own files are read by DeepSpeed's ``load_checkpoint``, which this module
does not control.
"""

from __future__ import annotations

import functools
import io
import os
import pickle
import stat
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path, PosixPath
from typing import Any, Final

import torch
from torch.distributed.checkpoint import metadata as dcp_metadata
from torch.distributed.checkpoint._traverse import set_element
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
from torch.distributed.checkpoint.filesystem import FileSystemReader
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta
from torch.distributed.checkpoint.planner import ReadItem

__all__ = ["SafePlanner", "SafeReader", "check_entries", "check_plain", "load_plain"]

_PLAIN_TYPES: Final = (
    torch.Tensor,
    str,
    bytes,
    int,
    float,
    complex,
    bool,
    type(None),
    torch.Size,
    torch.dtype,
)
_METADATA_CLASSES: Final = {
    ("torch.distributed.checkpoint.metadata", name): getattr(dcp_metadata, name)
    for name in (
        "BytesStorageMetadata",
        "ChunkStorageMetadata",
        "Metadata",
        "MetadataIndex",
        "StorageMeta",
        "TensorProperties",
        "TensorStorageMetadata",
        "_MEM_FORMAT_ENCODING",
    )
}


@functools.cache
def _metadata_globals() -> dict[tuple[str, str], Any]:
    from torch.distributed.checkpoint import filesystem

    allowed: dict[tuple[str, str], Any] = {
        **_METADATA_CLASSES,
        ("torch.distributed.checkpoint.filesystem", "_StorageInfo"): filesystem._StorageInfo,
        ("torch", "Size"): torch.Size,
        ("torch.serialization", "_get_layout"): torch.serialization._get_layout,
        ("pathlib", "PosixPath"): PosixPath,
        ("collections", "OrderedDict"): OrderedDict,
    }
    for name, value in vars(torch).items():
        if isinstance(value, torch.dtype):
            allowed[("torch", name)] = value
    return allowed


class _MetadataUnpickler(pickle.Unpickler):
    """An unpickler that builds DCP metadata and nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _metadata_globals()[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"{module}.{name} is not part of a checkpoint's metadata; refusing to load it"
            ) from None


class SafeReader(FileSystemReader):
    """DCP's file system reader, reading ``.metadata`` without running code."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        path = Path(self._get_metadata_path(kwargs.get("rank")))
        with open(path, "rb") as stream:
            metadata = _MetadataUnpickler(stream).load()
        if not isinstance(metadata, Metadata):
            raise pickle.UnpicklingError(f"{path}: holds a {type(metadata).__name__}, not metadata")
        storage_meta = getattr(metadata, "storage_meta", None) or StorageMeta()
        storage_meta.load_id = self.load_id
        metadata.storage_meta = storage_meta
        return metadata


class SafePlanner(DefaultLoadPlanner):
    """DCP's load planner, reading non-tensor values with ``weights_only=True``."""

    def load_bytes(self, read_item: ReadItem, value: io.BytesIO) -> None:
        loaded = torch.load(value, weights_only=True)
        if self.flatten_state_dict:
            set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], loaded)
        else:
            self.state_dict[read_item.dest_index.fqn] = loaded


def check_plain(value: Any, where: str) -> None:
    """TypeError naming ``where`` unless ``value`` is built of tensors and plain values only
    (what ``torch.load(weights_only=True)`` reads back)."""
    if isinstance(value, _PLAIN_TYPES):
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str | int | float | bool | type(None)):
                raise TypeError(f"{where}: a key of type {type(key).__name__} ({key!r})")
            check_plain(item, f"{where}[{key!r}]")
        return
    if isinstance(value, list | tuple | set | frozenset):
        for index, item in enumerate(value):
            check_plain(item, f"{where}[{index}]")
        return
    raise TypeError(
        f"{where}: a {type(value).__module__}.{type(value).__qualname__}; a checkpoint holds "
        "tensors and plain values only (str, numbers, None, lists, tuples, dicts), never pickled "
        "objects: return those from state_dict()"
    )


def load_plain(path: Path) -> Any:
    """What ``path`` (a ``torch.save`` file of plain values) holds, read without running code."""
    return torch.load(path, weights_only=True)


def check_entries(path: Path) -> None:
    """ValueError naming the first entry under ``path`` that is not a plain file or directory."""
    for directory, subdirectories, files in os.walk(path):
        for name in (*subdirectories, *files):
            entry = os.path.join(directory, name)
            mode = os.lstat(entry).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise ValueError(
                    f"{entry}: not a plain file or directory (a symbolic link, FIFO or device); "
                    "a checkpoint holds only what a save wrote"
                )
