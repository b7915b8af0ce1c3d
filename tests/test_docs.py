"""The documentation as a site and as files: mkdocs builds it strictly (a link to a missing page or anchor fails), and
every relative link in README.md and docs/ (data folders too, which mkdocs does not check) and every path of the
checkout that a user's page names (scripts/..., conf/..., examples/...) exists; no page names a file outside the
checkout: no absolute path but scratch (/tmp) and the system's folders, and no relative one (../) but a data root or
a checkout a command reads (--x-dir)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FOLDERS = "scripts|examples|conf|adrop|tests|hydra_plugins"
CHECKOUT_PATH = re.compile(rf"(?<![\w/.:])((?:{FOLDERS})/[\w./-]*\w\.(?:py|sh|yaml))")  # not REV:path, a file of then
UP_PATH = re.compile(r"(?<![\w./])(?<!-dir )((?:\.\./)+[\w.-][\w./-]*)")  # ../x, ../../x/y; not a --*-dir checkout
ABSOLUTE = re.compile(r"(?<![\w.:/~>}-])(/[a-z][\w.-]*/[\w.-][\w./-]*)")  # /x/y, not a URL's or a placeholder's tail
SYSTEM = ("/tmp/", "/dev/", "/usr/", "/proc/", "/etc/", "/home/me/")  # scratch, the system's, a reader's home
HISTORY = {"notebook.md"}  # the lab notebook names files as they were then


def test_the_site_builds_strictly(tmp_path):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"), strict=True, site_dir=str(tmp_path / "site"))
    build(config)  # strict: any warning (a missing page or anchor) raises
    site = tmp_path / "site"
    assert (site / "index.html").exists() and (site / "howto" / "train" / "index.html").exists()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_named_file_exists(page):
    text = page.read_text()
    missing = [
        target
        for target in LINK.findall(text)
        if not re.match(r"[a-z]+:|#", target) and not (page.parent / target.split("#")[0]).exists()
    ]
    if page.name not in HISTORY:
        missing += [path for path in CHECKOUT_PATH.findall(text) if not (ROOT / path).exists()]
    assert not missing, missing


def outside(page: Path, text: str) -> list[str]:
    """The paths that lead out of the checkout: every absolute one but scratch and the system's; the ../ ones (a link's
    from the page's folder, any other from the checkout's root, where commands run) but data roots (a path ending in
    data) and checkouts a command reads (--x-dir)."""
    links = [t for t in LINK.findall(text) if t.startswith("../")]
    rest = UP_PATH.findall(re.sub(r"\[[^\]]*\]\([^)\s]*\)", "", text))  # a link, its text too
    out = [p for p in ABSOLUTE.findall(text) if not p.startswith(SYSTEM)]
    for path, base in [(t, page.parent) for t in links] + [(t, ROOT) for t in rest]:
        path = path.split("#")[0].rstrip(".")
        if not re.search(r"(^|/)data/?$", path) and not (base / path).resolve().is_relative_to(ROOT):
            out.append(path)
    return out


DATA_PAGES = ROOT / "docs" / "results"  # its folders: result data, reports among them
WRITTEN = [p for p in PAGES if p.name not in HISTORY and DATA_PAGES not in p.parents[1:]]


@pytest.mark.parametrize("page", WRITTEN, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_names_a_file_outside_the_checkout(page):
    # the pages written, not the reports committed as result data (docs/results/<topic>/...)
    assert outside(page, page.read_text()) == []


def test_the_check_for_files_outside_finds_them():
    page = ROOT / "docs" / "howto" / "train.md"
    text = (
        "see [c](../cluster.md), data.root=../shared/data, ADROP_DATA=../shared/data/ and (../shared/REFERENCE.md), "
        "--authors-dir ../third_party/x, hydra.sweep.dir=/tmp/a/b, DATA=/work/me/data, https://x.org/a/b."
    )
    assert outside(page, text) == ["/work/me/data", "../shared/REFERENCE.md"]
