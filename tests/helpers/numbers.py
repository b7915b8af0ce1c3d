"""Whether the numbers a result page quotes come from its committed files.

A page's opening (its claim and its table: everything before its first `## ` heading) quotes numbers; a comment
in the page says which commands print them, run from the repository's root:

    <!-- recompute
    adrop report docs/results/<topic>/<experiment> --out {tmp}/report && cat {tmp}/report/results.md
    cat docs/results/<topic>/bench_x.txt
    -->

(run by bash; {tmp}: a new empty folder; a page may have several such comments, one beside each section whose
figures need one). Every decimal number of the opening (code, links and the comments left out) must equal a number
the commands print, rounded to the decimals the page shows it with (a percentage also as a fraction). Every decimal
number of a later section (from a `##` or deeper heading to the next) must be printed by the commands or stored in a
data file that the section names where a reader sees it, to the decimals shown: a link, or a path in code or text
(docs/results/<topic>/..., or <topic>/... from the page; `*` for any name), not in a comment. A folder stands for its
data files but its per-epoch logs (histories.csv, x_metrics.csv: thousands of values, which count only in the
paragraph that names them); markdown counts only as a report's results.md and docs/literature.md (published figures),
not as another page's prose. So a reader finds each quoted value in a file the text points to; the figures computed
from stored values (means, ratios, differences) are printed by the commands."""

from __future__ import annotations

import os
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
COMMENT = re.compile(r"<!--.*?-->", re.S)  # what a reader does not see, recompute comments among them
CODE_BLOCK = re.compile(r"```.*?```", re.S)


def opening(page: Path) -> str:
    """The page's text before its first second-level heading."""
    text = page.read_text()
    return re.split(r"^## ", text, maxsplit=1, flags=re.M)[0]


def quoted(text: str) -> list[tuple[str, bool]]:
    """The decimal numbers a reader sees in this markdown, each with whether it is a percentage (also the first of a
    range such as 4.39-4.56%)."""
    text = RECOMPUTE.sub("", text)
    text = CODE_BLOCK.sub("", text)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a link's target
    text = COMMENT.sub("", text)
    out = []
    for m in NUMBER.finditer(text):
        percent = bool(m.group("percent")) or bool(RANGE_TO_PERCENT.match(text, m.end()))
        out.append((m.group(0).split("%")[0].strip().replace("−", "-"), percent))
    return out


def commands(page: Path) -> list[str]:
    """The commands of all the page's recompute comments, in order."""
    return [c.strip() for found in RECOMPUTE.finditer(page.read_text()) for c in found.group("commands").splitlines()]


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


STORED = (".csv", ".txt", ".json", ".md", ".log", ".tsv", ".yaml")


# a file or folder a section names: a link's target, or a path with a slash standing alone, in code or after =
LINK = re.compile(r"\]\((?P<path>[^)#\s]+)")
PATH = re.compile(r"(?:(?<=[\s`(=])|^)(?P<path>[\w.*{}-]+(?:/[\w.*{}-]*)+)", re.M)


def sections(text: str) -> list[str]:
    """The text cut before each heading of level 2 or deeper."""
    return re.split(r"^(?=#{2,} )", text, flags=re.M)


PER_EPOCH = ("histories", "metrics")  # per-epoch logs (x_metrics.csv too): thousands of values, named by their own name
PROSE = ("results.md",)  # the one markdown a folder stands for: a report's tables (`adrop report`)


def named(section: str, page: Path) -> list[Path]:
    """The text files a section names where a reader sees it (not in its recompute comments): a file, or a folder's
    data files but its per-epoch logs and prose (another page: docs/literature.md and reports' results.md only)."""
    section = COMMENT.sub("", section)
    found: set[Path] = set()
    paths = [m.group("path") for m in LINK.finditer(section)] + [m.group("path") for m in PATH.finditer(section)]
    for path in paths:
        path = path.rstrip(".,;:")
        if "{" in path or path.startswith(("http", "/")):
            continue
        for base in (page.parent, ROOT):
            for hit in base.glob(path) if "*" in path else [base / path]:
                hit = hit.resolve()
                if not hit.is_relative_to(ROOT):  # a page names nothing outside the checkout
                    continue
                if hit.is_file() and _data(hit):
                    found.add(hit)
                elif hit.is_dir():
                    found.update(f for f in hit.rglob("*") if f.is_file() and _data(f) and not _per_epoch(f))
    return sorted(found)


def _data(file: Path) -> bool:
    if file.suffix != ".md":
        return file.suffix in STORED
    return file.name in PROSE or file == ROOT / "docs" / "literature.md"


def _per_epoch(file: Path) -> bool:
    return file.stem.startswith(PER_EPOCH) or file.stem.endswith(tuple("_" + p for p in PER_EPOCH))


def _env() -> dict:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


class Values:
    """The numbers some text holds, indexed by how a page may show them (so a page's hundreds of numbers are looked
    up, not compared with each of the folder's values)."""

    def __init__(self, text_or_values):
        if isinstance(text_or_values, str):
            values = []
            for m in NUMBER.finditer(text_or_values):
                try:
                    values.append(float(m.group(0).split("%")[0].strip().replace("−", "-")))
                except ValueError:
                    pass
        else:
            values = list(text_or_values)
        self.values = sorted(set(values))
        self.shown: dict[tuple, set] = {}

    def _as_shown(self, decimals: int, scientific: bool, scale: float) -> set:
        key = (decimals, scientific, scale)
        if key not in self.shown:
            if scientific:
                self.shown[key] = {f"{v:.{decimals}e}" for v in self.values}
            else:
                self.shown[key] = {round(v * scale, decimals) for v in self.values}
        return self.shown[key]

    def has(self, number: str, percent: bool) -> bool:
        """Whether a value, rounded as the page shows `number` (a percentage: also the value times 100), is
        `number`."""
        shown = float(number)
        decimals = len(number.split("e")[0].partition(".")[2])
        if "e" in number.lower():  # scientific: the same mantissa to the digits shown
            return f"{shown:.{decimals}e}" in self._as_shown(decimals, True, 1.0)
        scales = (1.0, 100.0) if percent else (1.0,)
        return any(round(shown, decimals) in self._as_shown(decimals, False, s) for s in scales)


def matches(number: str, percent: bool, values: list[float]) -> bool:
    return Values(values).has(number, percent)


def unrecomputed(page: Path, tmp: Path, printed_text: str | None = None) -> list[str]:
    """The numbers of the page's opening that its commands do not print."""
    values = Values(printed(page, tmp) if printed_text is None else printed_text)
    return [n + ("%" if p else "") for n, p in quoted(opening(page)) if not values.has(n, p)]


def unfound(page: Path, tmp: Path, printed_text: str | None = None) -> list[str]:
    """The numbers of the page's later sections that its commands do not print and no file their section names
    stores; a per-epoch log named counts for its own paragraph only (thousands of values)."""
    printed_values = Values(printed(page, tmp) if printed_text is None else printed_text)
    read = lambda files: Values("\n".join(f.read_text(errors="replace") for f in files))  # noqa: E731
    out = []
    for section in sections(page.read_text()[len(opening(page)) :]):
        files: Values | None = None
        body = CODE_BLOCK.sub("", COMMENT.sub("", section))  # no blank line of code or comment splits
        for paragraph in re.split(r"\n\s*\n", body):
            logs: Values | None = None
            for number, percent in quoted(paragraph):
                if printed_values.has(number, percent):
                    continue
                if files is None:  # read once a section needs it
                    files = read(f for f in named(section, page) if not _per_epoch(f))
                if files.has(number, percent):
                    continue
                if logs is None:
                    logs = read(f for f in named(paragraph, page) if _per_epoch(f))
                if not logs.has(number, percent):
                    out.append(number + ("%" if percent else ""))
    return out
