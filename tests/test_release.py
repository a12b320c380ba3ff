"""tools/release.py: version and pin rules as tables, bumping a small repo, and the real check."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import release

ROOT = Path(__file__).resolve().parents[1]
NAMES = frozenset({"trainer-api", "trainer-sdk", "gems-kernels"})


def pyproject(name: str, *dependencies: str, version_path: str = "../../VERSION") -> str:
    """A package pyproject.toml as the repo writes them."""
    lines = "".join(f'  "{dependency}",\n' for dependency in dependencies)
    return (
        f'[project]\nname = "{name}"\ndynamic = ["version"]\ndependencies = [\n{lines}]\n\n'
        f'[tool.hatch.version]\npath = "{version_path}"\n'
    )


def make_repo(root: Path, version: str, packages: dict[str, str]) -> Path:
    """A repo with VERSION and packages/<name>/pyproject.toml holding the given texts."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "VERSION").write_text(version + "\n")
    for name, text in packages.items():
        (root / "packages" / name).mkdir(parents=True)
        (root / "packages" / name / "pyproject.toml").write_text(text)
    return root


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('"trainer-api==0.1.0"', '"trainer-api==0.2.0"', id="plain-pin"),
        pytest.param("'trainer-api==0.1.0'", "'trainer-api==0.2.0'", id="single-quotes"),
        pytest.param('"trainer-api == 0.1.0"', '"trainer-api == 0.2.0"', id="spaces-kept"),
        pytest.param('"trainer-api[cli]==0.1.0"', '"trainer-api[cli]==0.2.0"', id="extras"),
        pytest.param('"Trainer_API==0.1.0"', '"Trainer_API==0.2.0"', id="non-canonical-name"),
        pytest.param(
            "\"trainer-sdk==0.1.0; python_version >= '3.10'\"",
            "\"trainer-sdk==0.2.0; python_version >= '3.10'\"",
            id="marker-kept",
        ),
        pytest.param(
            '["trainer-api==0.1.0", "trainer-sdk==0.0.9"]',
            '["trainer-api==0.2.0", "trainer-sdk==0.2.0"]',
            id="every-pin-even-a-stale-one",
        ),
        pytest.param('"torch==2.13.0"', '"torch==2.13.0"', id="third-party-untouched"),
        pytest.param('"trainer-apix==0.1.0"', '"trainer-apix==0.1.0"', id="longer-name-untouched"),
        pytest.param('"trainer-api>=0.1.0"', '"trainer-api>=0.1.0"', id="range-untouched"),
        pytest.param("trainer-api==0.1.0", "trainer-api==0.1.0", id="unquoted-prose-untouched"),
    ],
)
def test_rewrite_pins(text: str, expected: str) -> None:
    assert release.rewrite_pins(text, NAMES, "0.2.0") == expected


@pytest.mark.parametrize(
    ("new", "current", "error"),
    [
        pytest.param("0.2.0", "0.1.0", None, id="minor-bump"),
        pytest.param("0.1.1rc1", "0.1.0", None, id="pre-release"),
        pytest.param("1.0.0", "0.9.9", None, id="major-bump"),
        pytest.param("0.1.0", "0.1.0", "must be greater than the current version 0.1.0", id="same"),
        pytest.param("0.0.9", "0.1.0", "must be greater", id="lower"),
        pytest.param("v0.2.0", "0.1.0", "in its normal form '0.2.0'", id="not-normalised"),
        pytest.param("banana", "0.1.0", "is not a PEP 440 version", id="not-a-version"),
    ],
)
def test_check_new_version(new: str, current: str, error: str | None) -> None:
    if error is None:
        assert release.check_new_version(new, current) == new
    else:
        with pytest.raises(release.ReleaseError, match="NEW_VERSION") as raised:
            release.check_new_version(new, current)
        assert error in str(raised.value)


@pytest.mark.parametrize(
    ("requirement", "problem"),
    [
        pytest.param("trainer-api==0.1.0", False, id="exact-pin"),
        pytest.param("trainer_api[cli]==0.1.0", False, id="extras-and-underscore"),
        pytest.param("torch>=2.4", False, id="third-party-ignored"),
        pytest.param("trainer-api==0.0.9", True, id="old-pin"),
        pytest.param("trainer-api>=0.1.0", True, id="range"),
        pytest.param("trainer-api", True, id="unpinned"),
        pytest.param("trainer-api==0.1.0,>=0.1", True, id="pin-plus-range"),
        pytest.param("trainer-api==0.1.*", True, id="wildcard"),
        pytest.param("trainer-api @ file:///wheels/trainer_api.whl", True, id="url"),
    ],
)
def test_pin_problems(requirement: str, problem: bool) -> None:
    problems = release.pin_problems("trainer-sdk", [Requirement(requirement)], NAMES, "0.1.0")
    assert problems == (
        [f"trainer-sdk: requirement {str(Requirement(requirement))!r} must pin exactly ==0.1.0"]
        if problem
        else []
    )


def projects_of(**dependencies: list[str]) -> dict[str, release.Project]:
    """Projects named by the keywords (underscores for dashes), each with its requirements."""
    return {
        name.replace("_", "-"): release.Project(
            name=name.replace("_", "-"),
            directory=Path("packages", name),
            requirements=tuple(Requirement(line) for line in lines),
            version_source="../../VERSION",
        )
        for name, lines in dependencies.items()
    }


PROJECTS = projects_of(
    trainer_api=["pydantic>=2.7"],
    mpi_runtime=["cryptography>=42"],
    trainer_controller=["trainer-api==0.1.0", "mpi-runtime==0.1.0"],
    trainer_sdk=["trainer-controller==0.1.0", "trainer-api==0.1.0"],
    gems_kernels=["torch>=2.4"],
)


@pytest.mark.parametrize(
    ("roots", "closure"),
    [
        pytest.param(["gems-kernels"], ["gems-kernels"], id="standalone"),
        pytest.param(
            ["trainer-sdk"],
            ["mpi-runtime", "trainer-api", "trainer-controller", "trainer-sdk"],
            id="transitive",
        ),
        pytest.param(
            ["Trainer_API", "gems-kernels"], ["gems-kernels", "trainer-api"], id="several"
        ),
        pytest.param([], [], id="none"),
    ],
)
def test_dependency_closure(roots: list[str], closure: list[str]) -> None:
    assert release.dependency_closure(PROJECTS, roots) == closure


def test_dependency_closure_names_an_unknown_package() -> None:
    with pytest.raises(release.ReleaseError, match="--package: no package named 'trainer-cli'"):
        release.dependency_closure(PROJECTS, ["trainer-cli"])


def test_project_problems_flag_a_static_version_and_a_stale_pin() -> None:
    projects = {
        **PROJECTS,
        "trainer-api": release.Project("trainer-api", Path("x"), (), version_source=None),
        "trainer-sdk": release.Project(
            "trainer-sdk", Path("y"), (Requirement("trainer-api==0.0.1"),), "../../VERSION"
        ),
    }
    assert release.project_problems(projects, "0.1.0") == [
        "trainer-api: project.version must be dynamic with tool.hatch.version.path = "
        "'../../VERSION'",
        "trainer-sdk: requirement 'trainer-api==0.0.1' must pin exactly ==0.1.0",
    ]


def test_parse_project_reads_dependencies_extras_and_version_source() -> None:
    text = pyproject("Trainer_SDK", "trainer-api==0.1.0") + (
        '[project.optional-dependencies]\nkube = ["kubernetes>=30"]\n'
    )
    project = release.parse_project(tomllib.loads(text), Path("packages/trainer-sdk"))
    assert project.name == "trainer-sdk"
    assert [str(requirement) for requirement in project.requirements] == [
        "trainer-api==0.1.0",
        "kubernetes>=30",
    ]
    assert project.version_source == "../../VERSION"


def test_parse_project_names_the_bad_requirement() -> None:
    with pytest.raises(release.ReleaseError, match="dependency 'trainer-api=>1'"):
        release.parse_project({"project": {"dependencies": ["trainer-api=>1"]}}, Path("p"))


METADATA = """Metadata-Version: 2.4
Name: trainer-sdk
Version: 0.1.0
Summary: TrainerClient.
Author: The authors
License-Expression: Apache-2.0
License-File: LICENSE
Classifier: Typing :: Typed
Project-URL: Homepage, https://example.org
Requires-Dist: trainer-api==0.1.0
Requires-Dist: pyyaml>=6

The README.
"""


@pytest.mark.parametrize(
    ("metadata", "problems"),
    [
        pytest.param(METADATA, [], id="good"),
        pytest.param(
            METADATA.replace("Version: 0.1.0", "Version: 0.0.1"),
            ["trainer-sdk: metadata version '0.0.1' != 0.1.0"],
            id="wrong-version",
        ),
        pytest.param(
            METADATA.replace("trainer-api==0.1.0", "trainer-api>=0.1"),
            ["trainer-sdk (built): requirement 'trainer-api>=0.1' must pin exactly ==0.1.0"],
            id="range-in-wheel",
        ),
        pytest.param(
            METADATA.replace("Name: trainer-sdk", "Name: trainer-api"),
            ["trainer-sdk: metadata names 'trainer-api'"],
            id="wrong-name",
        ),
        pytest.param(
            METADATA.replace("License-File: LICENSE\n", "").replace(
                "Classifier: Typing :: Typed\n", ""
            ),
            [
                "trainer-sdk: metadata has no License-File (set project.license-files in "
                "pyproject.toml)",
                "trainer-sdk: metadata has no Classifier (set project.classifiers in "
                "pyproject.toml)",
            ],
            id="no-licence-file-no-classifiers",
        ),
    ],
)
def test_metadata_problems(metadata: str, problems: list[str]) -> None:
    assert release.metadata_problems(metadata, "trainer-sdk", NAMES, "0.1.0") == problems


def test_top_level_packages_are_the_wheels_importable_directories() -> None:
    files = [
        "gems_kernels/__init__.py",
        "gems_kernels/ops/__init__.py",
        "gems_kernels/ops/rms_norm.py",
        "gems_kernels-0.1.0.dist-info/METADATA",
        "lonely_module.py",
    ]
    assert release.top_level_packages(files) == ["gems_kernels"]


def report(*installed: tuple[str, str]) -> dict[str, object]:
    """The part of a `pip install --report` the release reads."""
    return {
        "install": [
            {"metadata": {"name": name}, "download_info": {"url": url}} for name, url in installed
        ]
    }


DIST = "file:///repo/dist"


@pytest.mark.parametrize(
    ("installed", "expected", "problems"),
    [
        pytest.param(
            [("trainer-sdk", f"{DIST}/sdk.whl"), ("trainer-api", f"{DIST}/api.whl")],
            ["trainer-api", "trainer-sdk"],
            [],
            id="siblings-from-dist",
        ),
        pytest.param(
            [("gems-kernels", f"{DIST}/g.whl"), ("torch", "file:///opt/wheels/torch.whl")],
            ["gems-kernels"],
            [],
            id="third-party-from-anywhere",
        ),
        pytest.param(
            [("trainer-sdk", f"{DIST}/sdk.whl"), ("trainer-api", "https://pypi.org/api.whl")],
            ["trainer-api", "trainer-sdk"],
            [f"installed trainer-api from https://pypi.org/api.whl, not from {DIST}"],
            id="sibling-from-the-index",
        ),
        pytest.param(
            [("gems-kernels", f"{DIST}/g.whl"), ("trainer-api", f"{DIST}/api.whl")],
            ["gems-kernels"],
            ["installed repo packages ['gems-kernels', 'trainer-api'], expected ['gems-kernels']"],
            id="extra-sibling",
        ),
    ],
)
def test_install_problems(
    installed: list[tuple[str, str]], expected: list[str], problems: list[str]
) -> None:
    assert release.install_problems(report(*installed), expected, NAMES, DIST) == problems


def test_isolated_environment_drops_what_changes_a_fresh_venv() -> None:
    environ = {
        "PATH": "/bin",
        "PYTHONPATH": "/src",
        "VIRTUAL_ENV": "/v",
        "TRITON_INTERPRET": "1",
        "PIP_FIND_LINKS": "/w",
    }
    assert release.isolated_environment(environ) == {"PATH": "/bin", "PIP_FIND_LINKS": "/w"}


def test_bump_rewrites_version_and_every_sibling_pin(tmp_path: Path) -> None:
    sdk = pyproject("trainer-sdk", "trainer-api==0.1.0", "torch==2.13.0")
    root = make_repo(
        tmp_path, "0.1.0", {"trainer-api": pyproject("trainer-api"), "trainer-sdk": sdk}
    )
    release.bump(root, "0.2.0")
    assert (root / "VERSION").read_text() == "0.2.0\n"
    assert (root / "packages/trainer-sdk/pyproject.toml").read_text() == sdk.replace(
        "trainer-api==0.1.0", "trainer-api==0.2.0"
    )
    assert (root / "packages/trainer-api/pyproject.toml").read_text() == pyproject("trainer-api")


def test_read_projects_leaves_out_a_private_package(tmp_path: Path) -> None:
    private = pyproject("kube-standin").replace(
        "[project]\n", f"[project]\nclassifiers = [{release.PRIVATE_CLASSIFIER!r}]\n"
    )
    root = make_repo(
        tmp_path, "0.1.0", {"trainer-api": pyproject("trainer-api"), "kube-standin": private}
    )
    assert sorted(release.read_projects(root)) == ["trainer-api"]


def test_bump_to_an_older_version_changes_nothing(tmp_path: Path) -> None:
    root = make_repo(tmp_path, "0.3.0", {"trainer-api": pyproject("trainer-api")})
    with pytest.raises(release.ReleaseError, match=r"greater than the current version 0\.3\.0"):
        release.bump(root, "0.2.0")
    assert (root / "VERSION").read_text() == "0.3.0\n"


def test_name_problems_ask_the_injected_lookup_for_every_name() -> None:
    asked: list[str] = []

    def taken(name: str) -> bool:
        asked.append(name)
        return name == "data-cache"

    assert release.name_problems(["trainer-api", "data-cache"], taken) == [
        "data-cache: the name is taken on the package index by another project (pip download "
        "--no-deps data-cache finds it); `pip install data-cache` would not install this package"
    ]
    assert sorted(asked) == ["data-cache", "trainer-api"]


FENCE = "```"
README = f"""# trainer-sdk

What it is.

## Install

{FENCE}bash
pip install "trainer-sdk[torch]"   # the local backend
{FENCE}

## Quickstart

{FENCE}console
$ trainer list
{FENCE}

{FENCE}python
print("hello")
{FENCE}

## Usage

See [the docs](https://example.org/docs), [a section](#usage) and `[grid](...)` in code.
"""


def test_readme_install_line_and_quickstart() -> None:
    assert release.readme_problems("trainer-sdk", README) == []
    requirement = release.install_requirement("trainer-sdk", README)
    assert requirement is not None and requirement.extras == {"torch"}
    assert release.quickstart_of(README) == release.Quickstart("python", 'print("hello")\n')


@pytest.mark.parametrize(
    ("readme", "problem"),
    [
        pytest.param(
            README + "\nMore in [the API](../trainer-api/README.md).\n",
            "trainer-sdk: README.md links to '../trainer-api/README.md', which does not exist off "
            "the repository (on the package index); use an absolute URL",
            id="relative-link",
        ),
        pytest.param(
            README.replace("pip install", "pipx install"),
            "trainer-sdk: README.md has no `pip install trainer-sdk` line in a code block",
            id="no-install-line",
        ),
        pytest.param(
            README.replace('pip install "trainer-sdk[torch]"', "pip install trainer-api"),
            "trainer-sdk: README.md has no `pip install trainer-sdk` line in a code block",
            id="install-line-of-another-package",
        ),
        pytest.param(
            README.replace("## Quickstart", "## Example"),
            "trainer-sdk: README.md has no '## Quickstart' section with a python or bash block",
            id="no-quickstart",
        ),
    ],
)
def test_readme_problems(readme: str, problem: str) -> None:
    assert release.readme_problems("trainer-sdk", readme) == [problem]


def test_console_scripts_of_a_wheel() -> None:
    entry_points = "[console_scripts]\nmpi-worker = a:b\nmpi-launch = a:c\n\n[other]\nx = y:z\n"
    assert release.console_scripts(entry_points) == ["mpi-launch", "mpi-worker"]
    assert release.console_scripts("") == []


@pytest.mark.parametrize(
    ("output", "ok"),
    [
        pytest.param("trainer 0.1.0\n", True, id="argparse-style"),
        pytest.param("warning: x\ndata-cache 0.1.0\n", True, id="last-line"),
        pytest.param("trainer, version 0.1.0\n", True, id="click-default"),
        pytest.param("trainer 0.1.0rc1\n", False, id="other-version"),
        pytest.param("", False, id="nothing"),
    ],
)
def test_version_problem(output: str, ok: bool) -> None:
    problem = release.version_problem("trainer", output, "0.1.0")
    assert (problem is None) == ok


def test_constraints_pin_everything_installed() -> None:
    installed = {
        "install": [
            {"metadata": {"name": "PyYAML", "version": "6.0.2"}},
            {"metadata": {"name": "trainer_api", "version": "0.1.0"}},
        ]
    }
    assert release.constraints_text(installed) == "pyyaml==6.0.2\ntrainer-api==0.1.0\n"


def test_footprint_table_largest_first() -> None:
    table = release.footprint_table(
        [
            release.Footprint("trainer-api", 10 * 2**20, 6),
            release.Footprint("gems-kernels", 2**30, 9),
        ]
    )
    assert table.splitlines() == [
        "package                    installed dependencies",
        "gems-kernels              1024.00 MB            9",
        "trainer-api                 10.00 MB            6",
    ]


def deployment(image: str) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "trainer-controller"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}},
    }


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "trainjobs.trainer.kubeflow.org"},
}


@pytest.mark.parametrize(
    ("documents", "with_crds", "problems"),
    [
        pytest.param([CRD, deployment("ghcr.io/x/trainer-controller:0.2.0")], True, [], id="good"),
        pytest.param(
            [deployment("ghcr.io/x/trainer-controller:0.1.0"), deployment("busybox:1")],
            False,
            ["f.yaml: image ghcr.io/x/trainer-controller:0.1.0 is not tagged 0.2.0"],
            id="stale-tag-other-images-ignored",
        ),
        pytest.param(
            [deployment("ghcr.io/x/trainer-controller:0.2.0")],
            True,
            ["f.yaml: has no CustomResourceDefinition (an install file ships its CRDs)"],
            id="overlay-without-crds",
        ),
        pytest.param(
            [CRD, {"kind": "ConfigMap"}],
            True,
            ["f.yaml: document 1 has no apiVersion, kind and metadata.name"],
            id="no-identity",
        ),
    ],
)
def test_manifest_problems(documents: list[object], with_crds: bool, problems: list[str]) -> None:
    assert (
        release.manifest_problems("f.yaml", documents, "trainer-controller", "0.2.0", with_crds)
        == problems
    )


LICENSE = b"Apache License\nVersion 2.0\n"


@pytest.mark.parametrize(
    ("files", "problems"),
    [
        pytest.param(
            {"p-1.dist-info/licenses/LICENSE": LICENSE, "p/__init__.py": None, "p/py.typed": None},
            [],
            id="wheel",
        ),
        pytest.param({"p-1/LICENSE": LICENSE, "p-1/src/p/py.typed": None}, [], id="sdist"),
        pytest.param({"p/py.typed": None}, ["a.whl: ships no LICENSE"], id="no-licence"),
        pytest.param(
            {"p-1/LICENSE": b"MIT", "p-1/src/p/py.typed": None},
            ["a.whl: p-1/LICENSE is not the repository's LICENSE"],
            id="other-licence",
        ),
        pytest.param(
            {"p-1/LICENSE": LICENSE},
            ["a.whl: ships no p/py.typed (the package has type hints)"],
            id="no-py-typed",
        ),
    ],
)
def test_shipped_problems(files: dict[str, bytes | None], problems: list[str]) -> None:
    assert release.shipped_problems("a.whl", files, LICENSE, ["p"]) == problems


def test_bump_sets_the_image_tag_of_kustomizations(tmp_path: Path) -> None:
    root = make_repo(tmp_path, "0.1.0", {"trainer-controller": pyproject("trainer-controller")})
    kustomization = root / "packages/trainer-controller/manifests/base/kustomization.yaml"
    kustomization.parent.mkdir(parents=True)
    kustomization.write_text("images:\n  - name: trainer-controller\n    newTag: 0.1.0\n")
    release.bump(root, "0.2.0")
    assert kustomization.read_text() == (
        "images:\n  - name: trainer-controller\n    newTag: 0.2.0\n"
    )


def test_parse_project_reads_the_quickstart_env() -> None:
    text = (
        pyproject("gems-kernels") + '[tool.release]\nquickstart-env = { TRITON_INTERPRET = "1" }\n'
    )
    project = release.parse_project(tomllib.loads(text), Path("packages/gems-kernels"))
    assert project.quickstart_env == {"TRITON_INTERPRET": "1"}


def run_release(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The release command line, as `hatch run release:release` runs it."""
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "release.py"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def test_check_refuses_a_stale_pin_before_building(tmp_path: Path) -> None:
    packages = {
        "trainer-api": pyproject("trainer-api"),
        "trainer-sdk": pyproject("trainer-sdk", "trainer-api==0.0.9"),
    }
    root = make_repo(tmp_path / "repo", "0.1.0", packages)
    result = run_release("--check", "--root", str(root), "--dist", str(tmp_path / "dist"))
    assert result.returncode == 1
    assert "trainer-sdk: requirement 'trainer-api==0.0.9' must pin exactly ==0.1.0" in result.stderr
    assert not (tmp_path / "dist").exists()


@pytest.mark.parametrize(
    "args",
    [pytest.param([], id="neither"), pytest.param(["0.2.0", "--check"], id="both")],
)
def test_command_line_wants_a_version_or_check(args: list[str]) -> None:
    result = run_release(*args)
    assert result.returncode == 2
    assert "give either NEW_VERSION or --check" in result.stderr


# Three fresh venvs get torch (gems-kernels, trainer-data-cache, trainer-sdk[torch]): minutes on a
# loaded 2-core machine, so this one test has a longer bound than the suite's default.
@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_every_package_installs_alone_and_its_quickstart_runs(tmp_path: Path) -> None:
    """The real check of every package (the one the release runs): names free on the index,
    build, twine check, install manifests, then per package a fresh venv with the wheel alone (and
    its README's extras), imports, each console command's --version and the README quickstart."""
    dist = tmp_path / "dist"
    result = run_release("--check", "--dist", str(dist), timeout=2300)
    assert result.returncode == 0, result.stdout + result.stderr
    version = (ROOT / "VERSION").read_text().strip()
    projects = release.read_projects(ROOT)
    files = {path.name for path in dist.iterdir()}
    for name in projects:
        module = name.replace("-", "_")
        assert {f"{module}-{version}-py3-none-any.whl", f"{module}-{version}.tar.gz"} <= files
        assert f"{name}-constraints.txt" in files
        assert f"install {name} alone" in result.stdout
    assert {
        "trainer-controller-standalone.yaml",
        "trainer-controller-cert-manager.yaml",
        "trainer-controller-runtimes.yaml",
    } <= files
    constraints = (dist / "trainer-controller-constraints.txt").read_text().splitlines()
    assert f"trainer-controller=={version}" in constraints
    assert not any(line.startswith("kubernetes==") for line in constraints)
    table = result.stdout[result.stdout.index("package ") :].splitlines()
    assert sorted(line.split()[0] for line in table[1 : len(projects) + 1]) == sorted(projects)


def write_package(root: Path, name: str, code: str, quickstart: str | None = None) -> None:
    """A minimal hatchling package at root/packages/<name> whose module holds `code`, with a
    LICENSE, a README (install line and quickstart) and a `NAME-hello` console command."""
    module = name.replace("-", "_")
    directory = root / "packages" / name
    (directory / "src" / module).mkdir(parents=True)
    (directory / "src" / module / "__init__.py").write_text(code)
    (directory / "src" / module / "py.typed").write_text("")
    (directory / "src" / module / "cli.py").write_text(
        "import sys\ndef main() -> None:\n    print(sys.argv[1:])\n"
    )
    (directory / "LICENSE").write_text("The licence.\n")
    (directory / "README.md").write_text(
        f"# {name}\n\nA package for the release tests.\n\n## Install\n\n"
        f"```bash\npip install {name}\n```\n\n## Quickstart\n\n"
        f"```python\n{quickstart or f'import {module}'}\n```\n"
    )
    (directory / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["hatchling>=1.26"]
            build-backend = "hatchling.build"

            [project]
            name = "{name}"
            description = "A package for the release tests."
            readme = "README.md"
            license = "Apache-2.0"
            license-files = ["LICENSE"]
            authors = [{{ name = "Tests" }}]
            classifiers = ["Typing :: Typed"]
            dynamic = ["version"]

            [project.urls]
            Homepage = "https://example.org"

            [project.scripts]
            {name}-hello = "{module}.cli:main"

            [tool.hatch.version]
            path = "../../VERSION"
            pattern = "(?P<version>\\\\S+)"

            [tool.hatch.build.targets.wheel]
            packages = ["src/{module}"]
            """
        )
    )


def small_repo(root: Path, **packages: tuple[str, str | None]) -> Path:
    """A repo at `root` with VERSION 1.0.0, a LICENSE and the packages (code, quickstart)."""
    root.mkdir()
    (root / "VERSION").write_text("1.0.0\n")
    (root / "LICENSE").write_text("The licence.\n")
    for name, (code, quickstart) in packages.items():
        write_package(root, name.replace("_", "-"), code, quickstart)
    return root


@pytest.mark.e2e
def test_check_fails_when_a_wheel_imports_an_undeclared_sibling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = small_repo(
        tmp_path / "repo",
        solo_base=("VALUE = 1\n", None),
        solo_user=("from solo_base import VALUE\n", None),  # not in its dependencies
    )
    with pytest.raises(release.ReleaseError) as raised:
        release.release(root, tmp_path / "dist", [], taken=lambda name: False)
    assert (
        "install solo-base alone (repo packages it pulls in: solo-base)" in capsys.readouterr().out
    )
    assert "import solo_user from the fresh venv failed" in str(raised.value)
    assert "No module named 'solo_base'" in str(raised.value)


@pytest.mark.e2e
def test_check_reports_a_taken_name_a_bad_command_and_a_failing_quickstart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = small_repo(
        tmp_path / "repo",
        solo_fine=("VALUE = 1\n", "import solo_fine\nprint(solo_fine.VALUE)"),
        solo_broken=("VALUE = 1\n", "raise SystemExit('the quickstart broke')"),
    )
    problems = release.release(root, tmp_path / "dist", [], taken=lambda name: name == "solo-fine")
    assert problems[0].startswith("solo-fine: the name is taken on the package index")
    assert (
        "solo-broken-hello --version printed \"['--version']\", expected a line ending in 1.0.0"
        in problems
    )
    assert any(
        "solo-broken's README quickstart (python) failed (exit 1)" in problem
        and "the quickstart broke" in problem
        for problem in problems
    )
    assert len(problems) == 4, problems  # and solo-fine-hello's --version
    assert "solo-fine  " in capsys.readouterr().out  # the footprint table


@pytest.mark.e2e
def test_the_index_lookup_finds_a_taken_name_and_not_a_free_one() -> None:
    assert release.taken_on_index("data-cache")  # an unrelated project on the index
    assert not release.taken_on_index("trainer-data-cache")


def test_parse_image_reads_requirements_and_smoke_and_names_what_is_missing() -> None:
    image = release.parse_image(
        {"requirements": ["trainer-sdk[trl]"], "smoke": "python -V"}, Path("/r/images/trl-trainer")
    )
    assert (image.name, image.requirements, image.smoke) == (
        "trl-trainer",
        ("trainer-sdk[trl]",),
        "python -V",
    )
    with pytest.raises(release.ReleaseError, match="expected requirements"):
        release.parse_image({"requirements": []}, Path("/r/images/x"))
    with pytest.raises(release.ReleaseError, match="requirement 'not a requirement!'"):
        release.parse_image({"requirements": ["not a requirement!"], "smoke": ""}, Path("/r/x"))


def test_image_references_of_this_repository_carry_the_release_tag() -> None:
    text = (
        "image: ghcr.io/trainer-platform/trl-trainer:0.1.0\n"
        "image: ghcr.io/trainer-platform/other:0.0.9\n"
        "image: ghcr.io/trainer-platform/model-initializer\n"
    )
    names = {"trl-trainer", "model-initializer"}
    assert release.rewrite_image_references(text, names, "0.2.0") == text.replace(
        "trl-trainer:0.1.0", "trl-trainer:0.2.0"
    )
    assert release.image_reference_problems("r.yaml", text, names, "0.2.0") == [
        "r.yaml: image ghcr.io/trainer-platform/trl-trainer:0.1.0 is not tagged 0.2.0"
    ]


def test_the_repositorys_images_parse_and_the_runtimes_name_them_at_its_version() -> None:
    images = release.read_images(ROOT)
    assert {"trl-trainer", "dataset-initializer", "model-initializer"} <= set(images)
    version = release.read_version(ROOT)
    for path in sorted(ROOT.glob(release.RUNTIME_FILES)):
        assert release.image_reference_problems(path.name, path.read_text(), images, version) == []
    trl = (ROOT / "packages/trainer-runtime/src/trainer_runtime/runtimes/trl-cpu.yaml").read_text()
    assert f"ghcr.io/trainer-platform/trl-trainer:{version}" in trl


def test_the_torchtune_runtimes_name_the_torchtune_images_at_the_version() -> None:
    assert "torchtune-trainer" in release.read_images(ROOT)
    version = release.read_version(ROOT)
    folder = ROOT / "packages/trainer-runtime/src/trainer_runtime/runtimes"
    runtimes = sorted(folder.glob("torchtune-*"))
    assert len(runtimes) == 3
    for path in runtimes:
        text = path.read_text()
        for image in ("torchtune-trainer", "model-initializer", "dataset-initializer"):
            assert f"ghcr.io/trainer-platform/{image}:{version}" in text, path.name
