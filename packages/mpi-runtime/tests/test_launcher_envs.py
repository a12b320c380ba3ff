import pytest
from mpi_runtime import (
    RESERVED_ENV_NAMES,
    SSH_ARGS,
    SSH_ARGS_ENV_NAMES,
    Implementation,
    InvalidArgumentError,
    launcher_env,
    reserved_env_names,
)

PATH = "/etc/mpi/hostfile"


@pytest.mark.parametrize(
    ("impl", "expected"),
    [
        pytest.param(
            "OpenMPI",
            [
                ("OMPI_MCA_orte_default_hostfile", PATH),
                ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
                ("OMPI_MCA_orte_set_default_slots", "4"),
                ("PRTE_MCA_prte_default_hostfile", PATH),
                ("PRTE_MCA_prte_keep_fqdn_hostnames", "false"),
                ("PRTE_MCA_prte_set_default_slots", "4"),
                ("OMPI_MCA_plm_rsh_args", SSH_ARGS),
                ("PRTE_MCA_plm_ssh_args", SSH_ARGS),
            ],
            id="openmpi-4-and-5",
        ),
        pytest.param(
            "Intel",
            [
                ("I_MPI_HYDRA_HOST_FILE", PATH),
                ("I_MPI_HYDRA_BOOTSTRAP", "ssh"),
                ("I_MPI_PERHOST", "4"),
                ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", SSH_ARGS),
            ],
            id="intel",
        ),
        pytest.param(
            "MPICH",
            [
                ("HYDRA_HOST_FILE", PATH),
                ("HYDRA_LAUNCHER", "ssh"),
                ("HYDRA_LAUNCHER_EXTRA_ARGS", SSH_ARGS),
            ],
            id="mpich",
        ),
    ],
)
def test_launcher_env_names_values_and_order(impl: str, expected: list[tuple[str, str]]) -> None:
    assert list(launcher_env(impl, PATH, 4).items()) == expected


@pytest.mark.parametrize("impl", list(Implementation))
def test_reserved_names_are_exactly_what_the_launcher_env_sets(impl: Implementation) -> None:
    assert reserved_env_names(impl.value.lower()) == set(launcher_env(impl, "/h", 3))
    assert RESERVED_ENV_NAMES[impl] == reserved_env_names(impl)
    assert set(SSH_ARGS_ENV_NAMES[impl]) <= RESERVED_ENV_NAMES[impl]


@pytest.mark.parametrize(
    ("impl", "path", "slots", "argument"),
    [
        pytest.param("LAM", PATH, 1, "impl", id="unknown-impl"),
        pytest.param("OpenMPI", "", 1, "hostfile_path", id="empty-path"),
        pytest.param("OpenMPI", PATH, 0, "slots", id="zero-slots"),
    ],
)
def test_launcher_env_rejects_bad_input(impl: str, path: str, slots: int, argument: str) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"^{argument}: "):
        launcher_env(impl, path, slots)
