"""The README starts with exactly two commands, and CI runs the second (the test command); its first look's commands
find MNIST offline."""

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_opens_with_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    head = readme.split("\n## ")[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", head, flags=re.S)
    assert len(blocks) == 2 and all(len(b.strip().splitlines()) == 1 for b in blocks)
    main_cmd, test_cmd = (b.strip() for b in blocks)
    assert "adrop " in main_cmd and "pytest" in test_cmd
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_cmd.replace("pip install -e", "pip install -q -e") in ci


def test_the_first_look_commands_find_mnist_offline(monkeypatch):
    """Each `adrop train` command of "A first look", composed as it runs from the checkout (a sweep: its first job),
    has the data root that the README's first command passes, the offline copy beside the checkout: in the command
    (data.root=...) or from ADROP_DATA exported earlier in the block."""
    from conftest import compose_config

    readme = (ROOT / "README.md").read_text()
    offline = re.search(r"data\.root=(\S+)", readme.split("\n## ")[0]).group(1)  # the first command's
    block = re.search(r"## A first look\n\n```bash\n(.*?)\n```", readme, flags=re.S).group(1)
    monkeypatch.delenv("ADROP_DATA", raising=False)
    monkeypatch.chdir(ROOT)
    trains = 0
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            monkeypatch.setenv(*words[1].split("=", 1))
        if words[:2] != ["adrop", "train"]:
            continue
        trains += 1
        overrides = [w.split(",")[0] for w in words[2:] if not w.startswith(("-", "hydra")) and "(" not in w]
        cfg = compose_config(*overrides)
        assert cfg.dataset.name == "mnist" and Path(cfg.data.root) == Path(offline), line
    assert trains >= 6
    if (ROOT / offline).exists():  # beside a checkout (CI's too): the folder that holds MNIST
        assert (ROOT / offline / "MNIST" / "raw").is_dir()
