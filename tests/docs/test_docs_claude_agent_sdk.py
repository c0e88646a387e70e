"""The Claude Agent SDK page's code is its example files, and the examples do what they say
(the SDK installs beside the test extra)."""

from __future__ import annotations

import pytest

from tests.support.framework_docs_support import (
    assert_blocks_are_examples,
    assert_prints_its_comments,
    assert_runs_silently,
)

SETUP, BAIL = "claude_agent_sdk_setup.py", "claude_agent_sdk_bail.py"


def test_every_python_block_of_the_page_is_an_example_file() -> None:
    assert_blocks_are_examples("claude-agent-sdk.md", SETUP, BAIL)


def test_the_bail_example_prints_what_its_comments_say() -> None:
    pytest.importorskip("claude_agent_sdk", reason="needs the claude-agent-sdk extra")
    assert_prints_its_comments(BAIL)


def test_the_setup_example_runs_and_prints_nothing() -> None:
    pytest.importorskip("claude_agent_sdk", reason="needs the claude-agent-sdk extra")
    assert_runs_silently(SETUP)
