"""Competitor adapters in the benchmark harness.

liger-kernel's softmax, cross-entropy, SwiGLU (gate and up in one tensor) and rope run under
Triton's interpreter on CPU tensors, so they are compared for real when liger-kernel is
installed. Its rms_norm, layer_norm and GeGLU kernels stop in the interpreter (Triton 3.9), and
FlagGems does not import without a GPU: for those, the tests check the adapters' side of each
call (argument layouts, names, the missing-library path) against ATen references.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch
import torch.nn.functional as F


def _case(bench: SimpleNamespace, op: str, dtype: torch.dtype = torch.float32) -> Any:
    every = [*bench.cases.core_cases(True), *bench.cases.fused_cases(True)]
    return next(c for c in every if c.op == op and c.dtype == dtype)


def _missing(name: str) -> ModuleType:
    raise ModuleNotFoundError(f"No module named {name!r}")


def test_a_missing_library_shows_dashes_and_says_so(bench: SimpleNamespace) -> None:
    (rival,) = bench.competitors.load(["liger"], importer=_missing)
    assert rival.entry is None
    assert "not installed" in rival.note and "liger-kernel==0.8.5" in rival.note
    result = bench.harness.Result("add", "float32", [4], 1.0, 0.5, 2.0, 10.0, None, True)
    assert bench.harness.run_rival(rival, _case(bench, "add"), (), None, 0.5, None, True) is None
    table = bench.harness.format_table([result], [rival]).splitlines()
    assert table[0].split()[-4:] == ["liger", "ms", "vs", "liger"]
    assert table[2].split()[-2:] == ["-", "-"]
    assert table[-1].startswith("liger: not installed") and table[-1].endswith("(columns show -)")


def test_unknown_competitor_names_are_refused(bench: SimpleNamespace) -> None:
    with pytest.raises(ValueError, match=r"competitors: unknown \['ligr'\]"):
        bench.competitors.load(["ligr"])


@pytest.mark.parametrize(
    ("overloads", "functions"),
    [
        pytest.param(["add"], ["add", "add_"], id="op-name-covers-overloads"),
        pytest.param(["add.Tensor"], ["add", "add_"], id="overload-name"),
        pytest.param(["_softmax_backward_data"], ["softmax_backward"], id="backward"),
        pytest.param(["cross_entropy_loss"], [], id="not-registered-by-flag-gems"),
    ],
)
def test_flag_gems_functions_for_aten_names(
    bench: SimpleNamespace, overloads: list[str], functions: list[str]
) -> None:
    def named(name: str) -> Any:
        return type(name, (), {})  # only __name__ matters

    config = [("add.Tensor", named("add")), ("add.Scalar", named("add")),
              ("add_.Tensor", named("add_")), ("_softmax", named("softmax")),
              ("_softmax_backward_data", named("softmax_backward")),
              ("nll_loss_forward", named("nll_loss_forward"))]  # fmt: skip
    assert bench.competitors.flag_gems_functions(config, overloads) == functions


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def test_rope_layouts_rotate_like_the_aten_reference(bench: SimpleNamespace) -> None:
    """liger's layout fed to the HuggingFace formula it implements, and FlagGems' (seq, dim/2)
    angles, give the cases' half-split rotation back."""
    case = _case(bench, "rotary_embedding")
    q, k, cos, sin = case.make_inputs((2, 6, 4, 8), torch.float32)
    expected = case.aten(q, k, cos, sin)

    lq, lk, lcos, lsin = bench.competitors.rope_to_liger(q, k, cos, sin)
    assert lq.shape == (2, 4, 6, 8) and lcos.shape == (1, 6, 8) and lcos.is_contiguous()
    assert lq.transpose(1, 2).is_contiguous()  # liger transposes back: no copy
    hf_cos, hf_sin = lcos.unsqueeze(1), lsin.unsqueeze(1)  # HF's unsqueeze_dim=1
    rotated = tuple(x * hf_cos + _rotate_half(x) * hf_sin for x in (lq, lk))
    for got, want in zip(bench.competitors.rope_from_liger(rotated), expected, strict=True):
        torch.testing.assert_close(got, want)

    fq, fk, fcos, fsin = bench.competitors.rope_to_flag_gems(q, k, cos, sin)
    assert fcos.shape == (6, 4) and fcos.stride(-1) == 1 and fsin.shape == (6, 4)
    assert fq is q and fk is k


def _flag_gems_stand_in(included: list[list[str]]) -> ModuleType:
    """FlagGems' entry points with its documented names, signatures and layouts, computed with
    torch (FlagGems imports only where a GPU is): checks what the adapter passes, not FlagGems."""

    def apply_rotary_pos_emb(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor,
                             sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        assert q.dim() == 4 and cos.shape == (q.shape[1], q.shape[-1] // 2) == sin.shape
        assert cos.stride(-1) == 1 and sin.stride(-1) == 1
        c, s = cos[:, None, :], sin[:, None, :]
        return tuple(  # type: ignore[return-value]
            torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)
            for x1, x2 in (x.chunk(2, dim=-1) for x in (q, k))
        )

    @contextlib.contextmanager
    def use_gems(include: list[str]) -> Iterator[None]:
        included.append(include)
        yield

    module = ModuleType("flag_gems")
    module.__dict__.update(
        __version__="stand-in",
        _FULL_CONFIG=(("add.Tensor", torch.add), ("mul.Tensor", torch.mul)),
        use_gems=use_gems,
        cross_entropy_loss=F.cross_entropy,
        silu_and_mul=lambda a, b: F.silu(a) * b,
        gelu_and_mul=lambda a, b, approximate: F.gelu(a, approximate=approximate) * b,
        apply_rotary_pos_emb=apply_rotary_pos_emb,
    )
    return module


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_flag_gems_adapter_passes_each_case_in_its_layout(bench: SimpleNamespace) -> None:
    included: list[list[str]] = []
    stand_in = _flag_gems_stand_in(included)
    (rival,) = bench.competitors.load(["flag_gems"], importer=lambda name: stand_in)
    assert rival.note == "stand-in (pinned: flag-gems==5.0.2)"
    assert rival.entry is not None and rival.entry(_case(bench, "mm")) is None
    ops = ["add", "cross_entropy", "silu_and_mul", "silu_and_mul_fwd_bwd", "gelu_and_mul",
           "rotary_embedding"]  # fmt: skip
    for op in ops:
        result = bench.harness.run_case(_case(bench, op), True, [rival])
        outcome = result.rivals["flag_gems"]
        assert outcome.error is None and outcome.matches, op
        assert outcome.ms > 0 and outcome.host_us > 0 and outcome.speedup > 0
    assert included == [["add"]]


@pytest.mark.parametrize(
    ("op", "kind"),
    [("add", "pointwise"), ("where", "pointwise"), ("sum", "reduction"), ("argmax", "reduction"),
     ("softmax", "norm"), ("layer_norm", "norm"), ("rms_norm", "norm"),
     ("cross_entropy", "loss"), ("mm", "other"), ("silu_and_mul", "fused"),
     ("rotary_embedding", "fused"), ("rms_norm_fwd_bwd", "fwd+bwd")],
)  # fmt: skip
def test_case_kinds(bench: SimpleNamespace, op: str, kind: str) -> None:
    assert bench.harness.case_kind(_case(bench, op)) == kind


def test_host_overhead_for_every_kind_in_its_own_table_and_the_json(
    bench: SimpleNamespace, tmp_path: Path
) -> None:
    harness = bench.harness
    cases = [_case(bench, op) for op in ("add", "sum", "rms_norm", "gelu_and_mul")]
    results, failures = harness.run_cases(cases, True, 600.0)
    assert failures == []
    table = harness.format_overhead_table(results).splitlines()
    assert table[0].startswith("host overhead per call")
    assert [line.split()[0] for line in table[3:7]] == ["fused", "norm", "pointwise", "reduction"]
    assert table[-1].startswith("reduction: gems/aten host overhead geometric mean")
    harness.write_json(results, tmp_path / "bench.json", {"device": "test"})
    payload = json.loads((tmp_path / "bench.json").read_text())
    assert set(payload["host_overhead_by_kind"]) == {"fused", "norm", "pointwise", "reduction"}
    assert all(r["aten_host_us"] > 0 and r["gems_host_us"] > 0 for r in payload["results"])


def test_liger_kernel_compared_in_the_smoke_run(
    bench: SimpleNamespace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip(
        "liger_kernel", reason="liger-kernel is not installed (pip install liger-kernel==0.8.5)"
    )
    target = tmp_path / "bench.json"
    argv = ["--smoke", "--json", str(target), "--competitors", "liger", "--only", "softmax"]
    code = bench.harness.main(bench.run_h200.h200_cases, "smoke", argv, bench.competitors.load)
    assert code == 0
    out = capsys.readouterr().out
    assert "geometric-mean speedup over liger on its 2 cases" in out
    payload = json.loads(target.read_text())
    assert payload["competitors"] == {"liger": "0.8.5"}
    for r in payload["results"]:
        liger = r["rivals"]["liger"]
        assert liger["matches"] and liger["ms"] > 0 and liger["host_us"] > 0, r["op"]


@pytest.mark.parametrize("op", ["silu_and_mul", "cross_entropy_fwd_bwd", "rotary_embedding"])
def test_liger_kernel_runs_in_its_own_layout(bench: SimpleNamespace, op: str) -> None:
    """float32 only: in bfloat16 liger's SwiGLU, softmax backward and rope give NaNs under the
    interpreter (an interpreter result, not a GPU one)."""
    pytest.importorskip(
        "liger_kernel", reason="liger-kernel is not installed (pip install liger-kernel==0.8.5)"
    )
    result = bench.harness.run_case(_case(bench, op), True, bench.competitors.load(["liger"]))
    liger = result.rivals["liger"]
    assert liger.error is None and liger.matches and liger.host_us > 0


def test_install_wheels_never_raises(bench: SimpleNamespace, tmp_path: Path) -> None:
    install = bench.competitors.install_wheels
    assert install(tmp_path / "absent").startswith("no competitor wheels in")
    (tmp_path / "broken-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    before = list(sys.path)
    line = install(tmp_path, tmp_path / "site")
    assert line.startswith("could not install competitor wheels") and sys.path == before


@pytest.mark.parametrize(
    ("names", "chosen"),
    [
        pytest.param(["liger_kernel-0.8.5-py3-none-any.whl"], [0], id="pure"),
        pytest.param(["sqlalchemy-2.0.48-cp27-cp27m-manylinux1_x86_64.whl"], [], id="other-python"),
        pytest.param(["a-1.0-py3-none-any.whl", "a-1.0-py2-none-any.whl"], [0], id="one-each"),
        pytest.param(["not-a-wheel.whl"], [], id="bad-name"),
    ],
)
def test_installable_wheels(bench: SimpleNamespace, names: list[str], chosen: list[int]) -> None:
    wheels = [Path(name) for name in names]
    ours, rest = bench.competitors.installable(wheels)
    assert ours == [wheels[i] for i in chosen]
    assert rest == [w for i, w in enumerate(wheels) if i not in chosen]


def test_fetch_script_downloads_the_pinned_versions(bench: SimpleNamespace) -> None:
    script = (Path(bench.competitors.__file__).parent / "fetch_competitors.sh").read_text()
    for competitor in bench.competitors.COMPETITORS:
        assert competitor.requirement in script
