"""Whether the numbers a result page opens with recompute from its committed files.

A page's opening (its claim and its table: everything before its first `## ` heading) quotes numbers; a comment
in the page says which commands print them, run from the repository's root:

    <!-- recompute
    adrop report docs/results/<topic>/<experiment> --out {tmp}/report && cat {tmp}/report/results.md
    cat docs/results/<topic>/bench_x.txt
    -->

(run by bash; {tmp}: a new empty folder). Every decimal number of the opening (code, links and the comment left
out) must equal a number the commands print, rounded to the decimals the page shows it with (a percentage also as a
fraction)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "results"
# a decimal or scientific number, standing alone or with a unit stuck to it (0.99x, 121.0k, 9.91s); not a part of
# a word, a version (3.11.7) or a commit (3e889f4)
NUMBER = re.compile(
    r"(?<![\w.])[-−]?(?:\d+\.\d+(?:e[-+]?\d+)?|\d+e[-+]?\d+)(?=(?:x|k|M|G|ms|s)?(?!\w|\.\d))(?P<percent>\s*%)?"
)
RANGE_TO_PERCENT = re.compile(r"\s*[-–]\s*\d+(?:\.\d+)?\s*%")  # the rest of a range of percentages
RECOMPUTE = re.compile(r"<!--\s*recompute\s*\n(?P<commands>.*?)-->", re.S)


def opening(page: Path) -> str:
    """The page's text before its first second-level heading."""
    text = page.read_text()
    return re.split(r"^## ", text, maxsplit=1, flags=re.M)[0]


def quoted(text: str) -> list[tuple[str, bool]]:
    """The decimal numbers a reader sees in this markdown, each with whether it is a percentage (also the first of a
    range such as 4.39-4.56%)."""
    text = RECOMPUTE.sub("", text)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a link's target
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    out = []
    for m in NUMBER.finditer(text):
        percent = bool(m.group("percent")) or bool(RANGE_TO_PERCENT.match(text, m.end()))
        out.append((m.group(0).split("%")[0].strip().replace("−", "-"), percent))
    return out


def commands(page: Path) -> list[str]:
    found = RECOMPUTE.search(page.read_text())
    return [] if found is None else [c.strip() for c in found.group("commands").splitlines() if c.strip()]


def printed(page: Path, tmp: Path) -> str:
    """What the page's recompute commands print (stdout), run in the repository's root."""
    out = []
    for command in commands(page):
        done = subprocess.run(
            command.replace("{tmp}", str(tmp)),
            shell=True,
            executable="/bin/bash",
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            env=_env(),
        )
        assert done.returncode == 0, f"{page.name}: `{command}` failed: {done.stderr[-2000:]}"
        out.append(done.stdout)
    return "\n".join(out)


def _env() -> dict:
    import os

    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


def matches(number: str, percent: bool, values: list[float]) -> bool:
    """Whether a value printed, rounded as the page shows `number` (a percentage: also the value times 100),
    is `number`."""
    shown = float(number)
    decimals = len(number.split("e")[0].partition(".")[2])
    if "e" in number.lower():  # scientific: the same mantissa to the digits shown
        return any(f"{v:.{decimals}e}" == f"{shown:.{decimals}e}" for v in values)
    scales = (1.0, 100.0) if percent else (1.0,)
    return any(round(v * s, decimals) == round(shown, decimals) for v in values for s in scales)


def unrecomputed(page: Path, tmp: Path) -> list[str]:
    """The numbers of the page's opening that its commands do not print."""
    values = []
    for m in NUMBER.finditer(printed(page, tmp)):
        try:
            values.append(float(m.group(0).split("%")[0].strip().replace("−", "-")))
        except ValueError:
            pass
    return [n + ("%" if p else "") for n, p in quoted(opening(page)) if not matches(n, p, values)]
