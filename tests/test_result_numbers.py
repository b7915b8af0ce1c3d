"""Every number a result page opens with (its claim and its table) recomputes from the page's committed files, by
the commands the page names (tests/helpers/numbers.py says how a page names them)."""

import pytest

from helpers import numbers

PAGES = sorted(p for p in numbers.PAGES.glob("*.md") if p.name != "README.md")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_the_numbers_a_page_opens_with_recompute(page, tmp_path):
    assert not numbers.quoted(numbers.opening(page)) or numbers.commands(page), f"{page.name} names no commands"
    assert numbers.unrecomputed(page, tmp_path) == []


def test_the_check_finds_what_a_reader_sees_and_matches_as_shown():
    text = "errs 2.73% ± 0.06 at `lr=1e-3` [x](a/1.5.md) 1.2e-4 v3.11.7 <!-- 9.99 -->"
    assert numbers.quoted(text) == [("2.73", True), ("0.06", False), ("1.2e-4", False)]
    assert numbers.quoted("err 4.39-4.56%") == [("4.39", True), ("4.56", True)]
    assert numbers.matches("2.73", True, [0.02731]) and numbers.matches("0.06", False, [0.0649])
    assert not numbers.matches("0.06", False, [0.066]) and numbers.matches("1.2e-4", False, [0.000121])
    assert numbers.matches("1e-3", False, [0.00104]) and not numbers.matches("1e-3", False, [0.0005])
    assert [n for n, _ in numbers.quoted("0.99x, 121.0k in 9.91s at 3e889f4 on 3.11.7")] == ["0.99", "121.0", "9.91"]
