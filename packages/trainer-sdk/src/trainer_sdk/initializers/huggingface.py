"""Download a data set or model repository from the HuggingFace Hub over its HTTP API."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from trainer_sdk.initializers.files import download_file, is_ignored

__all__ = ["DEFAULT_ENDPOINT", "download_huggingface"]

DEFAULT_ENDPOINT = "https://huggingface.co"


def _split(storage_uri: str) -> tuple[str, str]:
    """``hf://user/repo[/sub/path]`` -> (``user/repo``, ``sub/path``); an unscoped
    ``hf://repo`` (``hf://gpt2``) -> (``repo``, ``""``)."""
    if not storage_uri.startswith("hf://"):
        raise ValueError(f"STORAGE_URI: expected hf://[<user>/]<repo>, got {storage_uri!r}")
    parts = [part for part in storage_uri[len("hf://") :].split("/") if part]
    if not parts:
        raise ValueError(f"STORAGE_URI: expected hf://[<user>/]<repo>, got {storage_uri!r}")
    return "/".join(parts[:2]), "/".join(parts[2:])


def download_huggingface(
    storage_uri: str,
    target: Path,
    kind: str,
    endpoint: str = DEFAULT_ENDPOINT,
    token: str | None = None,
    ignore_patterns: Sequence[str] = (),
) -> list[Path]:
    """Every file of the repository (or of its sub-path) into ``target``; returns the files."""
    if kind not in ("dataset", "model"):
        raise ValueError(f"kind: expected 'dataset' or 'model', got {kind!r}")
    repo, sub_path = _split(storage_uri)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    api = f"{endpoint}/api/{kind}s/{repo}/revision/main"
    with urllib.request.urlopen(
        urllib.request.Request(api, headers=headers), timeout=60
    ) as response:
        siblings = [item["rfilename"] for item in json.load(response).get("siblings", [])]
    prefix = f"{sub_path}/" if sub_path else ""
    wanted = [
        name for name in siblings if (not sub_path or name == sub_path or name.startswith(prefix))
    ]
    resolve = f"{endpoint}/datasets/{repo}" if kind == "dataset" else f"{endpoint}/{repo}"
    written = []
    for name in wanted:
        if is_ignored(name, ignore_patterns):
            continue
        url = f"{resolve}/resolve/main/{urllib.parse.quote(name)}"
        relative = _relative(name, sub_path)
        written.append(
            download_file(urllib.request.Request(url, headers=headers), target, relative)
        )
    if not written:
        raise FileNotFoundError(f"{storage_uri}: no files to download (after ignore patterns)")
    return written


def _relative(name: str, sub_path: str) -> str:
    """Where a repository file goes under the target: relative to the requested sub-path."""
    if sub_path and name.startswith(f"{sub_path}/"):
        return name[len(sub_path) + 1 :]
    if sub_path and name == sub_path:
        return PurePosixPath(name).name
    return name
