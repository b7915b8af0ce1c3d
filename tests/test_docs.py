"""The documentation as a site and as files: mkdocs builds it strictly (a link to a missing page or anchor fails), and
every relative link in README.md and docs/ (data folders too, which mkdocs does not check) and every path of the
checkout that a user's page names (scripts/..., conf/..., examples/...) exists."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FOLDERS = "scripts|examples|conf|adrop|tests|hydra_plugins"
CHECKOUT_PATH = re.compile(rf"(?<![\w/.])((?:{FOLDERS})/[\w./-]*\w\.(?:py|sh|yaml))")
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
