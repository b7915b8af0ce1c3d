"""Every number a result page opens with (its claim and its table) recomputes from the page's committed files, by
the commands the page names; every number of its later sections is printed by those commands or stored in a file
its section names (tests/helpers/numbers.py says how a page names them)."""

import pytest

from helpers import numbers

PAGES = sorted(p for p in numbers.PAGES.glob("*.md") if p.name != "README.md")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_the_numbers_a_page_quotes_come_from_its_files(page, tmp_path):
    assert not numbers.quoted(numbers.opening(page)) or numbers.commands(page), f"{page.name} names no commands"
    printed = numbers.printed(page, tmp_path)
    assert numbers.unrecomputed(page, tmp_path, printed) == [], "the opening"
    assert numbers.unfound(page, tmp_path, printed) == [], "the later sections"


def test_the_check_finds_what_a_reader_sees_and_matches_as_shown():
    text = "errs 2.73% ± 0.06 at `lr=1e-3` [x](a/1.5.md) 1.2e-4 v3.11.7 <!-- 9.99 -->"
    assert numbers.quoted(text) == [("2.73", True), ("0.06", False), ("1.2e-4", False)]
    assert numbers.quoted("err 4.39-4.56%") == [("4.39", True), ("4.56", True)]
    assert numbers.matches("2.73", True, [0.02731]) and numbers.matches("0.06", False, [0.0649])
    assert not numbers.matches("0.06", False, [0.066]) and numbers.matches("1.2e-4", False, [0.000121])
    assert numbers.matches("1e-3", False, [0.00104]) and not numbers.matches("1e-3", False, [0.0005])
    assert [n for n, _ in numbers.quoted("0.99x, 121.0k in 9.91s at 3e889f4 on 3.11.7")] == ["0.99", "121.0", "9.91"]


def test_later_sections_may_quote_what_a_file_they_name_stores(tmp_path, monkeypatch):
    pages = tmp_path / "docs" / "results"
    (pages / "topic" / "seeds").mkdir(parents=True)
    (pages / "topic" / "runs.csv").write_text("seed,error\n0,0.02731\n")
    (pages / "topic" / "seeds" / "one.txt").write_text("loss 1.875\n")
    page = pages / "topic.md"
    page.write_text(
        "Errors 2.7%.\n<!-- recompute\necho 0.027\n-->\n## Details\nSeed 0: 2.73% ([runs](topic/runs.csv)), "
        "mean 0.03.\n<!-- recompute\necho 0.03\n-->\nAnd 9.99.\n### Losses\nIts loss 1.875 (`topic/seeds/`), "
        "error 2.73% again.\n## Elsewhere\nLoss 1.875 (docs/results/topic/seeds/*.txt).\n"
    )
    monkeypatch.setattr(numbers, "PAGES", pages)
    monkeypatch.setattr(numbers, "ROOT", tmp_path)
    assert numbers.commands(page) == ["echo 0.027", "echo 0.03"]
    assert numbers.unrecomputed(page, tmp_path) == []
    # 9.99 is nowhere; the second 2.73% is stored, but in a file its section does not name
    assert numbers.unfound(page, tmp_path) == ["9.99", "2.73%"]
    assert numbers.named("see [a](topic/runs.csv), `topic/seeds`", page) == sorted(
        [(pages / "topic" / "runs.csv").resolve(), (pages / "topic" / "seeds" / "one.txt").resolve()]
    )
    outside = tmp_path.parent / f"{tmp_path.name}_outside.csv"  # beside the checkout, not in it
    outside.write_text("1.875\n")
    found = numbers.named(f"RESULTS=topic/runs.csv and ../../../{outside.name}", page)
    assert found == [(pages / "topic" / "runs.csv").resolve()]


def test_a_named_folder_stands_for_its_data_not_its_per_epoch_logs_nor_other_pages(tmp_path, monkeypatch):
    pages = tmp_path / "docs" / "results"
    (pages / "topic" / "run").mkdir(parents=True)
    (pages / "topic" / "run" / "histories.csv").write_text("epoch,loss\n1,0.4321\n")
    (pages / "topic" / "run" / "single_metrics.csv").write_text("epoch,seconds\n1,1.424\n")
    (pages / "topic" / "run" / "results.csv").write_text("error\n0.0199\n")
    (pages / "other.md").write_text("Elsewhere 0.777.\n")
    (tmp_path / "docs" / "literature.md").write_text("Published 1.64%.\n")
    page = pages / "topic.md"
    page.write_text(
        "Errors 2.0%.\n## Runs\n<!-- recompute\necho 0.0199\n-->\n<!-- topic/run/histories.csv -->\n"
        "In [run/](topic/run/): 1.99%, loss 0.4321, epoch 1.424 s, as [other.md](other.md)'s 0.777 and the\n"
        "[literature](../literature.md)'s 1.64%.\n"
        "## The log\nLoss 0.4321 ([histories.csv](topic/run/histories.csv)).\n\nAnd 0.4321 again.\n"
    )
    monkeypatch.setattr(numbers, "PAGES", pages)
    monkeypatch.setattr(numbers, "ROOT", tmp_path)
    # a per-epoch log counts in the paragraph that names it itself, not through its folder nor through a comment;
    # another page's prose does not count, the published figures do
    assert numbers.unfound(page, tmp_path, printed_text="") == ["0.4321", "1.424", "0.777", "0.4321"]
