"""GRPO's reward functions, both sides, in plain Python (no torch, no TRL).

Submit side (``reward_spec``): each of ``GRPO.rewards`` becomes a JSON object in the job's args
(``--reward_functions``), a built-in by its settings, a ``FunctionReward`` by its function's
source (as a ``CustomTrainer``'s function travels). Pod side (``reward_functions``): those
objects become the callables TRL's ``GRPOTrainer`` calls, each given the prompts and
completions as text and the data set's other columns; TRL names each one's metric after it
(``rewards/<name>/mean``).
"""

from __future__ import annotations

import inspect
import json
import math
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from trainer_sdk import types
from trainer_sdk.training.engines.settings import field_error, whole_number_problem

if TYPE_CHECKING:
    from trainer_api import FieldError

__all__ = ["RewardFunction", "reward_functions", "reward_spec"]

RewardFunction = Callable[..., list[float]]
_KINDS: Final = "ExactMatchReward, RegexReward, LengthReward or FunctionReward"


def _text(value: Any) -> str:
    """A prompt or completion as text: the last message's content when it is a conversation."""
    if isinstance(value, list):
        return str(value[-1]["content"]) if value else ""
    return str(value)


def _source(func: Any, where: str) -> tuple[dict[str, Any], list[FieldError]]:
    if not callable(func) or not hasattr(func, "__name__"):
        return {}, [field_error(where, f"expected a function, got {type(func).__name__}")]
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as error:
        return {}, [field_error(where, f"cannot read the source of {func!r}: {error}")]
    return {"kind": "function", "name": func.__name__, "source": source}, []


def reward_spec(reward: object, where: str) -> tuple[dict[str, Any], list[FieldError]]:
    """Submit side: ``reward`` as the JSON object the pod reads, and one error per bad
    setting at ``where.<field>``."""
    if isinstance(reward, types.FunctionReward):
        spec, errors = _source(reward.func, f"{where}.func")
    elif isinstance(reward, types.ExactMatchReward):
        spec = {"kind": "exact_match", "column": reward.column}
        ok = isinstance(reward.column, str) and reward.column
        problem = f"expected the name of a column, got {reward.column!r}"
        errors = [] if ok else [field_error(f"{where}.column", problem)]
    elif isinstance(reward, types.RegexReward):
        spec, errors = {"kind": "regex", "pattern": reward.pattern}, []
        try:
            re.compile(reward.pattern)
        except (re.error, TypeError) as error:
            problem = f"expected a regular expression, got {reward.pattern!r}: {error}"
            errors.append(field_error(f"{where}.pattern", problem))
    elif isinstance(reward, types.LengthReward):
        spec = {"kind": "length", "target": reward.target}
        wrong = whole_number_problem(reward.target, 1)
        errors = [field_error(f"{where}.target", wrong)] if wrong else []
    else:
        return {}, [field_error(where, f"expected one of {_KINDS}, got {type(reward).__name__}")]
    weight = reward.weight
    if (
        isinstance(weight, bool)
        or not isinstance(weight, (int, float))
        or not math.isfinite(weight)
    ):
        errors.append(field_error(f"{where}.weight", f"expected a number, got {weight!r}"))
    return spec, errors


def _exact_match(column: str) -> RewardFunction:
    def exact_match(completions: Sequence[str], **columns: Sequence[Any]) -> list[float]:
        if column not in columns:
            raise KeyError(f"ExactMatchReward: no column {column!r} (columns: {sorted(columns)})")
        expected = columns[column]
        return [
            float(c.strip() == str(e).strip()) for c, e in zip(completions, expected, strict=True)
        ]

    return exact_match


def _regex(pattern: str) -> RewardFunction:
    compiled = re.compile(pattern)

    def regex(completions: Sequence[str], **_: Sequence[Any]) -> list[float]:
        return [float(compiled.fullmatch(c.strip()) is not None) for c in completions]

    return regex


def _length(target: int) -> RewardFunction:
    def length(completions: Sequence[str], **_: Sequence[Any]) -> list[float]:
        return [max(0.0, 1.0 - abs(len(c.strip()) - target) / target) for c in completions]

    return length


def _function(name: str, source: str) -> RewardFunction:
    namespace: dict[str, Any] = {"__name__": f"reward_{name}"}
    exec(compile(source, f"<reward function {name}>", "exec"), namespace)
    func: RewardFunction = namespace[name]
    return func


def _built(spec: Mapping[str, Any]) -> RewardFunction:
    kind = spec.get("kind")
    if kind == "exact_match":
        return _exact_match(spec["column"])
    if kind == "regex":
        return _regex(spec["pattern"])
    if kind == "length":
        return _length(int(spec["target"]))
    if kind == "function":
        return _function(spec["name"], spec["source"])
    raise ValueError(f"--reward_functions: unknown kind {kind!r} in {dict(spec)}")


def reward_functions(specs: str, columns: Sequence[str]) -> list[RewardFunction]:
    """Pod side: the callables for ``specs`` (the ``--reward_functions`` JSON), in their order;
    each passes TRL's prompts and completions as text and the data set's ``columns`` (besides
    ``prompt``) on, nothing else."""
    wanted = [column for column in columns if column != "prompt"]

    def adapted(func: RewardFunction) -> RewardFunction:
        def reward(prompts: list[Any], completions: list[Any], **extra: Any) -> list[float]:
            given = {column: extra[column] for column in wanted if column in extra}
            texts = [_text(p) for p in prompts]
            return func(prompts=texts, completions=[_text(c) for c in completions], **given)

        reward.__name__ = func.__name__
        return reward

    parsed = json.loads(specs)
    if not isinstance(parsed, list) or not parsed:
        raise ValueError("--reward_functions: expected a non-empty JSON list of reward functions")
    return [adapted(_built(spec)) for spec in parsed]
