"""The Agno page's code is its example files, and the examples do what they say."""

from __future__ import annotations

import pytest

from tests.support.framework_docs_support import (
    assert_blocks_are_examples,
    assert_prints_its_comments,
    assert_runs_silently,
)

SETUP, BAIL = "agno_setup.py", "agno_bail.py"


def test_every_python_block_of_the_page_is_an_example_file() -> None:
    assert_blocks_are_examples("agno.md", SETUP, BAIL)


def test_the_bail_example_prints_what_its_comments_say() -> None:
    pytest.importorskip("agno", reason="needs the agno extra")
    assert_prints_its_comments(BAIL)


def test_the_setup_example_runs_and_prints_nothing() -> None:
    pytest.importorskip("agno", reason="needs the agno extra")
    assert_runs_silently(SETUP)
