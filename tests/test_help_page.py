"""`adrop train --help` without torch (adrop.train.command.help_page): Hydra's help, line for line, with the methods'
Params read from their sources."""

import dataclasses
import subprocess
import sys
import typing

import pytest

from adrop.train.command import help_page

NO_TORCH = (
    "import sys; from adrop.commands import train; code = train.main(sys.argv[1:]); "
    "assert not [m for m in sys.modules if m.split('.')[0] == 'torch'], 'torch imported'; sys.exit(code)"
)
# Hydra's own help (the app, torch and all) for each of a JSON list of argument lists, one after another in one
# process (app.main starts each command afresh): each one's exit status and what it wrote to stdout and stderr
HYDRAS_HELPS = """
import json, os, sys, tempfile
from adrop.train.command import app

said = []
for args in json.loads(sys.argv[1]):
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        kept = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            code = app.main(args)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(kept[0], 1)
            os.dup2(kept[1], 2)
        texts = [os.pread(f.fileno(), os.fstat(f.fileno()).st_size, 0).decode() for f in (out, err)]
        said.append([code, *texts])
print(json.dumps(said))
"""
HELPS = [
    [],
    ["method=adaptive_dropout", "method.params.mask=gaussian", "model=lenet5", "dataset=digits", "lam=3e-4"],
    ["method=hard_concrete", "method.params.beta=1"],  # an int into a float field
]
WRONG = {"method.params.beta=abc": "hard_concrete", "method.params.final_sparsity=x": "magnitude_pruning"}
HYDRAS = [
    *([*overrides, "--help"] for overrides in HELPS),
    *([f"method={method}", wrong, "--help"] for wrong, method in WRONG.items()),
    *([f"method={method}", "+method.params.typo=1", "--help"] for method in WRONG.values()),
]


def python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def hydras_help():
    """hydras_help(*args): Hydra's help for `adrop train <args>` (one of HYDRAS), as a finished process. Torch's import,
    the cost of each, is paid once: every one of HYDRAS in one process."""
    import json

    done = python(HYDRAS_HELPS, json.dumps(HYDRAS))
    assert done.returncode == 0 and len(json.loads(done.stdout)) == len(HYDRAS), done.stderr
    said = {tuple(args): subprocess.CompletedProcess(args, *s) for args, s in zip(HYDRAS, json.loads(done.stdout))}
    return lambda *args: said[args]


@pytest.mark.slow
@pytest.mark.parametrize("overrides", HELPS)
def test_the_help_is_hydras_and_imports_no_torch(overrides, hydras_help):
    hydras = hydras_help(*overrides, "--help")
    warm = python(NO_TORCH, *overrides, "--help")  # the first help of all: there is nothing to warm
    assert hydras.returncode == 0 and warm.returncode == 0, warm.stderr
    assert warm.stdout == hydras.stdout
    assert "== Configuration groups ==" in warm.stdout
    if overrides == HELPS[0]:  # the same command whatever the overrides: once
        assert "penalty_params: {}" in python(NO_TORCH, "method=logsum", "--help").stdout


@pytest.mark.slow
@pytest.mark.parametrize("wrong", WRONG)
def test_the_params_read_are_typed_and_closed_as_the_methods_own(wrong, hydras_help):
    method = WRONG[wrong]
    hydras = hydras_help(f"method={method}", wrong, "--help")
    warm = python(NO_TORCH, f"method={method}", wrong, "--help")
    assert hydras.returncode == warm.returncode == 2 and warm.stdout == "" and warm.stderr.count("\n") == 1
    assert "could not be converted" in warm.stderr, warm.stderr
    added = [hydras_help(f"method={method}", "+method.params.typo=1", "--help")]
    added.append(python(NO_TORCH, f"method={method}", "+method.params.typo=1", "--help"))
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

    lines = [("adrop train method=lo", 2), ("adrop tr", 1), ("adrop report ru", 2)]
    script = 'eval "$(adrop train -sc install=bash)"'  # installed once, then each line completed in turn
    for i, (line, word) in enumerate(lines):  # each with its own COMPREPLY, and its stderr in a file of its own
        script += (
            f'; COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; COMP_WORDS=({line}); COMP_CWORD={word}; '
            f'COMPREPLY=(); hydra_bash_completion 2>err{i}; echo "${{COMPREPLY[@]}}"'
        )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    said = done.stdout.splitlines()
    assert len(said) == len(lines) and done.stderr == "", done.stdout + done.stderr
    assert said[0].split() == ["method=logsum"], (tmp_path / "err0").read_text()
    assert said[1].split() == ["train"]  # the command's name
    # another command's arguments: nothing offered, nothing said
    assert said[2].split() == [] and (tmp_path / "err2").read_text() == ""
