"""The README starts with exactly two commands, and CI runs the second (the test command)."""
import re
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
    assert test_cmd.replace('pip install -e', 'pip install -q -e') in ci
