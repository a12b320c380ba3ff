"""The model zoo: twenty architectures that build from configs; a smoke run of the models whose
ops joined gems with the zoo (each training step on gems, float32 within 1e-5 of float64); the
zoo table's targets, the FlagGems list and the README sections they are written into. The whole
zoo (every model, 3 float32 and 20 bfloat16 seeds) runs in the benchmark: hours under the
interpreter, not here."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch


def test_twenty_architectures_build_from_configs(bench: SimpleNamespace) -> None:
    names = list(bench.model_zoo.MODELS)
    assert len(names) >= 20
    for name in names:
        torch.manual_seed(0)
        case = bench.model_zoo.build(name)
        assert any(p.requires_grad for p in case.model.parameters()), name
        assert case.inputs, name
    with pytest.raises(ValueError, match="name: expected one of"):
        bench.model_zoo.build("alexnet")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("whisper", id="whisper-conv1d"),
        pytest.param("swin", id="swin-roll-position-bias-gradient"),
        pytest.param("clip", id="clip-integer-argmax"),
    ],
)
def test_step_runs_on_gems_within_fp32_target(bench: SimpleNamespace, name: str) -> None:
    """Before the zoo's ops: Whisper's 1-D convolutions, Swin's roll and the sum of its
    position bias gradient, CLIP's argmax over token ids ran on ATen."""
    row = bench.real_models.compare(name, torch.float32, seed=0, size=bench.model_zoo.SMOKE)
    assert row.native_ops == ()
    assert max(row.gems_logits, row.gems_grads) <= bench.zoo.FP32_TARGET, row


def _row(bench: SimpleNamespace, model: str, dtype: str, seed: int, **fields: Any) -> Any:
    values = {
        "gems_logits": 1e-7,
        "aten_logits": 1e-7,
        "gems_grads": 1e-7,
        "aten_grads": 1e-7,
        "gems_ops": 20,
        "native_ops": (),
        "seconds": 1.0,
        "step_ops": ("mm.default",),
    }
    values.update(fields)
    return bench.real_models.ModelError(model=model, dtype=dtype, seed=seed, **values)


def test_zoo_rows_judge_each_target(bench: SimpleNamespace) -> None:
    rows = [
        _row(bench, "ok", "float32", 0),
        _row(bench, "ok", "bfloat16", 0, gems_logits=1e-3, aten_logits=1e-3),
        _row(bench, "aten", "float32", 0, native_ops=("roll.default",)),
        _row(bench, "fp32", "float32", 0, gems_grads=2e-5),
        _row(bench, "fp32", "float32", 1),
        *(_row(bench, "bf16", "bfloat16", s, gems_logits=1.5e-3, aten_logits=1e-3)
          for s in range(3)),
    ]  # fmt: skip
    zoo_rows = {r.model: r for r in bench.zoo.zoo_rows(rows)}
    assert list(zoo_rows) == ["ok", "aten", "fp32", "bf16"]
    assert zoo_rows["ok"].missed(1.1) == []
    assert zoo_rows["aten"].missed(1.1) == ["ops left to ATen"]
    assert zoo_rows["fp32"].fp32_gems == 2e-5  # the worst seed, not the median
    assert zoo_rows["fp32"].missed(1.1) == ["float32 over 1e-05"]
    assert zoo_rows["bf16"].missed(1.1) == ["bfloat16 over 1.1x"]
    table = list(bench.zoo.format_zoo(list(zoo_rows.values()), 1.1))
    assert table[2].startswith("| ok | 20 | none | 1 | 1.0e-07 | 1.0e-07 | 0.0e+00 | 1 | 1.00")
    assert table[3].startswith("| aten | 20 | roll.default | 1 |")
    assert table[3].endswith("| 0 | - | - | - |")
    assert table[5].startswith("| bf16 | 20 | none | 0 | - | - | - | 3 | 1.50")


def test_zoo_main_writes_the_readme_table_and_the_ops(
    bench: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    readme, ops = tmp_path / "README.md", tmp_path / "zoo_ops.json"
    results = tmp_path / "zoo_results.json"
    readme.write_text("# x\n<!-- zoo:start -->\nold\n<!-- zoo:end -->\nafter\n")
    ops.write_text('{"swin": ["roll.default"]}')  # a model not run: its ops are kept
    monkeypatch.setattr(bench.zoo, "README", readme)
    monkeypatch.setattr(bench.zoo, "OPS_JSON", ops)
    ran: list[tuple[str, str, int]] = []

    def compare(name: str, dtype: torch.dtype, seed: int) -> Any:
        ran.append((name, str(dtype).removeprefix("torch."), seed))
        return _row(bench, name, ran[-1][1], seed, gems_ops=len(ran))

    monkeypatch.setattr(bench.real_models, "compare", compare)
    common = ["--results", str(results), "--readme"]
    assert bench.zoo.main(["--models", "t5", "--fp32-seeds", "0", "--bf16-seeds", "0", "1",
                           *common]) == 0  # fmt: skip
    text = readme.read_text()
    assert "old" not in text and text.endswith("<!-- zoo:end -->\nafter\n")
    assert "| t5 | 3 | none | 1 | 1.0e-07 |" in text
    assert json.loads(ops.read_text()) == {"t5": ["mm.default"], "swin": ["roll.default"]}
    # Part 2 of 2 of three models is the second; its rows join t5's, the table lists both.
    ran.clear()
    assert bench.zoo.main(["--models", "gpt2", "t5", "swin", "--part", "2/2", "--fp32-seeds",
                           "--bf16-seeds", "1", "2", *common]) == 0  # fmt: skip
    assert ran == [("t5", "bfloat16", 1), ("t5", "bfloat16", 2)]
    stored = bench.zoo.load_results(results)
    assert [(r.dtype, r.seed) for r in stored] == [
        ("float32", 0),
        ("bfloat16", 0),
        ("bfloat16", 1),
        ("bfloat16", 2),
    ]
    assert stored[2].gems_ops == 1 and stored[2].step_ops == ("mm.default",)  # replaced
    assert "| t5 | 2 | none | 1 | 1.0e-07 | 1.0e-07 | 0.0e+00 | 3 |" in readme.read_text()
    with pytest.raises(SystemExit):
        bench.zoo.main(["--part", "3/2", *common])


FLAGGEMS_SOURCE = """
def enable(lib=None, unused=None, registrar=None):
    registrar(
        (
            ("abs", abs),
            ("add.Tensor", add),
            ("zeros_like", zeros_like),
            ("arange.start_step", arange_start),
            ("atan", atan),
            ("bitwise_left_shift", bitwise_left_shift),
            # ("index.Tensor", index),
            ("abs", abs),
        ),
        user_unused_ops_list=list(set(unused or [])),
    )


NOT_OPS = (("a", b),)
"""


def test_flaggems_list_is_read_from_its_enable_call(bench: SimpleNamespace) -> None:
    """The ("overload", function) pairs of enable(), once each; comments and other tuples are
    not read."""
    assert bench.flaggems_diff.flaggems_overloads(FLAGGEMS_SOURCE) == [
        "abs", "add.Tensor", "zeros_like", "arange.start_step", "atan", "bitwise_left_shift",
    ]  # fmt: skip
    with pytest.raises(ValueError, match=r"no .* pairs found"):
        bench.flaggems_diff.flaggems_overloads("def enable():\n    pass\n")


def test_missing_overloads_say_what_aten_has_and_who_calls_them(bench: SimpleNamespace) -> None:
    flaggems = bench.flaggems_diff.flaggems_overloads(FLAGGEMS_SOURCE)
    gems = ("abs", "add.Tensor", "arange.start_out")
    zoo_ops = {"unet": ["zeros_like.default", "add.Tensor"], "t5": ["zeros_like.default"]}
    rows = {r.overload: r for r in bench.flaggems_diff.missing_overloads(flaggems, gems, zoo_ops)}
    assert list(rows) == ["arange.start_step", "atan", "bitwise_left_shift", "zeros_like"]
    assert rows["arange.start_step"].gems_siblings == ("arange.start_out",)
    assert rows["bitwise_left_shift"].aten.startswith("not in torch")
    assert rows["zeros_like"].aten == "composite, explicit"
    assert rows["zeros_like"].zoo_models == ("unet", "t5")
    assert rows["atan"].aten == "kernel" and rows["atan"].zoo_models == ()


def test_readme_section_is_replaced_and_a_missing_one_named(
    bench: SimpleNamespace, tmp_path: Path
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- t:start -->\n1\n2\n<!-- t:end -->\nb\n")
    bench.readme_tables.replace_section(readme, "t", ["x", "y"])
    assert readme.read_text() == "a\n<!-- t:start -->\nx\ny\n<!-- t:end -->\nb\n"
    with pytest.raises(ValueError, match=r"README.md: expected one <!-- u:start -->"):
        bench.readme_tables.replace_section(readme, "u", ["x"])


def test_zoo_steps_agree_on_the_first_loss_and_stop_at_the_deadline(
    bench: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The GPU timing of the zoo's steps (run here with its timer replaced): a model agrees when
    both first losses match; no model starts after the deadline; $OUT gets the JSON."""
    losses = {False: 2.0, True: 2.01}  # ATen, gems: 0.5% apart, within bfloat16's 2%
    monkeypatch.setattr(
        bench.zoo_steps, "_time_step", lambda case, gems, steps, device: (10.0, losses[gems])
    )
    monkeypatch.setenv("OUT", str(tmp_path))
    assert bench.zoo_steps.main(["--smoke", "--models", "gpt2", "vit"]) == 0
    rows = json.loads((tmp_path / "gems_zoo_steps_h200.json").read_text())
    assert [(r["model"], r["matches"], r["speedup"]) for r in rows] == [
        ("gpt2", True, 1.0), ("vit", True, 1.0),
    ]  # fmt: skip
    losses[True] = 2.1
    assert bench.zoo_steps.main(["--smoke", "--models", "gpt2"]) == 1
    assert bench.zoo_steps.main(["--smoke", "--models", "gpt2", "vit", "--deadline", "0"]) == 0
    assert json.loads((tmp_path / "gems_zoo_steps_h200.json").read_text()) == []
