"""`adrop train --help` without torch (adrop.train.command.help_page): Hydra's help, line for line, with the methods'
Params read from their sources."""

import dataclasses
import subprocess
import sys
import typing

import pytest

from adrop.train.command import help_page

HYDRAS_HELP = "import sys; from adrop.train.command import app; sys.exit(app.main(sys.argv[1:]))"
NO_TORCH = (
    "import sys; from adrop.commands import train; code = train.main(sys.argv[1:]); "
    "assert not [m for m in sys.modules if m.split('.')[0] == 'torch'], 'torch imported'; sys.exit(code)"
)


def python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["method=adaptive_dropout", "method.params.mask=gaussian", "model=lenet5", "dataset=digits", "lam=3e-4"],
        ["method=hard_concrete", "method.params.beta=1"],
    ],
)  # an int into a float field
def test_the_help_is_hydras_and_imports_no_torch(overrides):
    hydras = python(HYDRAS_HELP, *overrides, "--help")
    warm = python(NO_TORCH, *overrides, "--help")  # the first help of all: there is nothing to warm
    assert hydras.returncode == 0 and warm.returncode == 0, warm.stderr
    assert warm.stdout == hydras.stdout
    assert (
        "== Configuration groups ==" in warm.stdout
        and "penalty_params: {}" in python(NO_TORCH, "method=logsum", "--help").stdout
    )


@pytest.mark.slow
@pytest.mark.parametrize("wrong", ["method.params.beta=abc", "method.params.final_sparsity=x"])
def test_the_params_read_are_typed_and_closed_as_the_methods_own(wrong):
    method = "hard_concrete" if "beta" in wrong else "magnitude_pruning"
    hydras = python(HYDRAS_HELP, f"method={method}", wrong, "--help")
    warm = python(NO_TORCH, f"method={method}", wrong, "--help")
    assert hydras.returncode == warm.returncode == 2 and warm.stdout == "" and warm.stderr.count("\n") == 1
    assert "could not be converted" in warm.stderr, warm.stderr
    added = [python(code, f"method={method}", "+method.params.typo=1", "--help") for code in (HYDRAS_HELP, NO_TORCH)]
    assert added[0].returncode == added[1].returncode and added[0].stdout == added[1].stdout  # as Hydra has it


@pytest.mark.slow
def test_a_wrong_override_in_the_help_is_one_line(adrop):
    out = adrop("train", "metod=logsum", "--help")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (
        "adrop train: error: unknown key metod (did you mean method?); `adrop train --help` lists the keys and groups\n"
    )


def test_only_the_help_takes_the_quick_way():
    assert help_page.requested(["--help"]) and help_page.requested(["method=logsum", "-h"])
    assert not help_page.requested(["method=logsum"])
    assert not help_page.requested(["-m", "--help"]) and not help_page.requested(["--help", "--cfg", "job"])
    for hydras in ("hydra/launcher=stacked", "hydra.verbose=true", "+hydra.job.env_set.X=1"):  # Hydra's own help
        assert not help_page.requested([hydras, "--help"])


def described(cls) -> tuple:
    hints = typing.get_type_hints(cls)
    fields = [
        (f.name, hints[f.name], f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
        for f in dataclasses.fields(cls)
    ]
    return cls.__name__, fields


def test_the_params_read_from_the_sources_are_the_methods_own():
    from adrop import methods

    read = help_page.params_from_source()
    assert read.keys() == methods.METHODS.keys()
    for name, cls in methods.METHODS.items():
        assert read[name] is not cls.Params and described(read[name]) == described(cls.Params), name
    assert described(read["adaprox"])[1][:2] == [("penalty", str, "logsum"), ("penalty_params", dict, {})]  # a base's


@pytest.mark.parametrize(
    "source",
    [
        "from typing import Optional\n@dataclass\nclass P:\n    x: Optional[int] = None\n",  # a type it does not know
        "@dataclass\nclass P:\n    x: int = some_function()\n",  # a default it cannot compute
        "@dataclass\nclass P:\n    x: dict = field(default_factory=lambda: {'a': 1})\n",  # a factory it cannot follow
        "class P:\n    x: int = 1\n",  # not a dataclass
        "@dataclass\nclass A:\n    x: float = 1.0\n@dataclass\nclass B:\n    x: float = 2.0\n"
        "@dataclass\nclass P(A, B):\n    pass\n",  # two bases: their order is the MRO's, not followed here
    ],
)
def test_a_params_the_reader_cannot_follow_imports_the_methods(source, tmp_path, monkeypatch):
    from adrop import methods

    folder = tmp_path / "methods"
    folder.mkdir()
    (folder / "mine.py").write_text(source + '@register\nclass Mine:\n    name = "mine"\n    Params = P\n')
    with pytest.raises((help_page.Unreadable, NameError)):
        help_page.params_from_source(folder)
    real = help_page.params_from_source

    def wrong_folder(folder_=None):
        return real(folder)

    monkeypatch.setattr(help_page, "params_from_source", wrong_folder)
    assert help_page.method_params() == {name: cls.Params for name, cls in methods.METHODS.items()}


@pytest.mark.slow
def test_tab_completion_as_hydras_bash_script_installs_and_runs_it(tmp_path):
    """`eval "$(adrop train -sc install=bash)"`, then the completion of a half-typed override: the script asks
    `adrop -sc query=bash` about the line `adrop train method=lo`."""
    import os
    import shutil
    from pathlib import Path

    if shutil.which("bash") is None:
        pytest.skip("no bash")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}

    def completed(line: str, word: int) -> subprocess.CompletedProcess:
        script = (
            f'eval "$(adrop train -sc install=bash)"; COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; '
            f'COMP_WORDS=({line}); COMP_CWORD={word}; hydra_bash_completion; echo "${{COMPREPLY[@]}}"'
        )
        return subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
        )

    out = completed("adrop train method=lo", 2)
    assert out.stdout.split() == ["method=logsum"], out.stderr
    assert completed("adrop tr", 1).stdout.split() == ["train"]  # the command's name
    other = completed("adrop report ru", 2)  # another command's arguments: nothing offered, nothing said
    assert other.stdout.split() == [] and other.stderr == ""
