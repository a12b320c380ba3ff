import pytest
from mpi_runtime import Implementation, InvalidArgumentError, parse_implementation


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("OpenMPI", Implementation.OPENMPI, id="crd-openmpi"),
        pytest.param("Intel", Implementation.INTEL, id="crd-intel"),
        pytest.param("MPICH", Implementation.MPICH, id="crd-mpich"),
        pytest.param("openmpi", Implementation.OPENMPI, id="cli-openmpi"),
        pytest.param("intel", Implementation.INTEL, id="cli-intel"),
        pytest.param("mpich", Implementation.MPICH, id="cli-mpich"),
        pytest.param("", Implementation.OPENMPI, id="crd-empty-defaults-to-openmpi"),
        pytest.param(Implementation.MPICH, Implementation.MPICH, id="member"),
    ],
)
def test_parse_implementation_accepts_crd_and_cli_spellings(
    value: str, expected: Implementation
) -> None:
    assert parse_implementation(value) is expected


@pytest.mark.parametrize("value", ["mvapich", "open-mpi", None, 3], ids=str)
def test_parse_implementation_names_the_argument_and_choices(value: object) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^impl: expected ") as raised:
        parse_implementation(value)  # type: ignore[arg-type]
    assert raised.value.argument == "impl"
    assert isinstance(raised.value, ValueError)
