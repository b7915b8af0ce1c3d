"""`adrop train --help` without torch (adrop.train.command.help_page): Hydra's help, line for line, from a cache of the
methods' Params that follows adrop's sources."""

import json
import subprocess
import sys

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
def test_the_help_is_hydras_and_imports_no_torch_once_cached(overrides):
    hydras = python(HYDRAS_HELP, *overrides, "--help")
    cold = python(NO_TORCH.replace("assert not", "assert 1 or"), *overrides, "--help")  # fills the cache
    warm = python(NO_TORCH, *overrides, "--help")
    assert hydras.returncode == 0 and cold.returncode == 0 and warm.returncode == 0, warm.stderr
    assert cold.stdout == hydras.stdout
    assert warm.stdout == hydras.stdout
    assert (
        "== Configuration groups ==" in warm.stdout
        and "penalty_params: {}" in python(NO_TORCH, "method=logsum", "--help").stdout
    )


@pytest.mark.slow
@pytest.mark.parametrize("wrong", ["method.params.beta=abc", "method.params.final_sparsity=x"])
def test_the_cached_params_are_typed_and_closed_as_the_methods_own(wrong, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # a cache of its own: no other test's help in it
    method = "hard_concrete" if "beta" in wrong else "magnitude_pruning"
    python(NO_TORCH.replace("assert not", "assert 1 or"), f"method={method}", "--help")  # the cache is there
    hydras = python(HYDRAS_HELP, f"method={method}", wrong, "--help")
    warm = python(NO_TORCH, f"method={method}", wrong, "--help")
    assert hydras.returncode == warm.returncode == 2 and warm.stdout == "" and warm.stderr.count("\n") == 1
    assert "could not be converted" in warm.stderr, warm.stderr
    added = [python(code, f"method={method}", "+method.params.typo=1", "--help") for code in (HYDRAS_HELP, NO_TORCH)]
    assert added[0].returncode == added[1].returncode and added[0].stdout == added[1].stdout  # as Hydra has it


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


def test_the_cache_follows_the_sources(tmp_path, monkeypatch, cache_folder):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "b.py").write_text("y = 2\n")
    before = help_page.sources_digest(package)
    (package / "sub" / "b.py").write_text("y = 3\n")
    assert help_page.sources_digest(package) != before
    (package / "sub" / "b.py").write_text("y = 2\n")
    assert help_page.sources_digest(package) == before
    (package / "sub" / "b.py").rename(package / "b.py")  # the same bytes under another name
    assert help_page.sources_digest(package) != before

    # a cache file of these sources that cannot be read is made again, from the methods themselves
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "cache" / "adrop").mkdir(parents=True)
    (tmp_path / "cache" / "adrop" / "method_params-0123.json").write_text("{}")  # an earlier version's
    own = help_page.method_params()  # no cache yet: the methods' own classes, and the cache written
    (written,) = (tmp_path / "cache" / "adrop").glob("method_params-*.json")  # the earlier one removed
    assert json.loads(written.read_text()) == help_page.described_params()
    rebuilt = help_page.method_params()
    assert rebuilt.keys() == own.keys()
    for name, cls in own.items():  # the same name, fields, types and defaults
        assert rebuilt[name] is not cls and help_page.describe(rebuilt[name]) == help_page.describe(cls)
    assert rebuilt["adaptive_dropout"]().mask == "bernoulli"
    written.write_text("{not json")
    assert help_page.method_params() == own and json.loads(written.read_text()) == help_page.described_params()
    assert [p.name for p in written.parent.iterdir()] == [written.name]  # no temporary file left


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
