"""Every how-to page (docs/howto/) starts with commands that run as written: its first bash block, line by line, in
a fresh folder beside the checkout's examples/ and scripts/, with the page's file blocks (a python block whose first
line is `# <name>.py`) written there first and its other python blocks run after. Trainings are shortened to
EPOCHS epochs (and a lam search's rounds with them), an example's to STEPS steps (its --stop scaled with them);
everything else is the page's text."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOWTO = ROOT / "docs" / "howto"
PAGES = sorted(p.name for p in HOWTO.glob("*.md") if p.name != "README.md")
EPOCHS = 3
STEPS = 120  # past StepLR's first 100 steps with the stop scaled to 60, as the page's 300 and 150 are past theirs


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def shortened(line: str) -> str:
    """The command with every `epochs=N` at most EPOCHS (a lam search's rounds follow the runs' epochs), and an
    example's `--steps N` at most STEPS, its `--stop M` scaled as its steps are (a stop before the end stays one)."""
    line = re.sub(r"(?<![\w.])epochs=(\d+)", lambda m: f"epochs={min(int(m[1]), EPOCHS)}", line)
    steps = re.search(r"(?<!\S)--steps (\d+)(?!\S)", line)
    if steps is None or int(steps[1]) <= STEPS:
        return line
    line = re.sub(r"(?<!\S)--stop (\d+)(?!\S)", lambda m: f"--stop {int(m[1]) * STEPS // int(steps[1])}", line)
    return line.replace(steps[0], f"--steps {STEPS}", 1)


def test_every_page_is_listed_in_the_index_and_opens_with_commands():
    index = (HOWTO / "README.md").read_text()
    assert PAGES and all(f"({page})" in index for page in PAGES)
    for page in PAGES:
        text = (HOWTO / page).read_text()
        first = text.split("\n", 1)[1].lstrip()  # after the title
        assert first.startswith("```bash\n"), page
        assert all(line.strip() for line in blocks(text, "bash")[0].splitlines()), page


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_a_how_to_pages_commands_run_as_written(page, tmp_path):
    text = (HOWTO / page).read_text()
    for folder in ("examples", "scripts"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    later = []
    for block in blocks(text, "python"):
        name = re.match(r"# (\w+\.py)\b", block)
        if name:
            (tmp_path / name[1]).write_text(block)
        else:
            later.append(block)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)  # a network beside the command imports as a user's does (adrop puts the folder on
    # the import path)
    env.pop("ADROP_DATA", None)  # the pages' data need no download and no data root
    for line in blocks(text, "bash")[0].splitlines():
        done = subprocess.run(
            shortened(line), shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        if shlex.split(line)[:2] == ["adrop", "train"]:
            assert "Traceback" not in done.stderr, done.stderr
    for code in later:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{code}\n{done.stderr[-2000:]}"
