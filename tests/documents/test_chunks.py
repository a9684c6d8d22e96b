"""Chunking one section: whole blocks packed greedily, big blocks split where a reader would."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem.documents.chunks import ChunkText, chunk_section, embedding_text
from graphmem.documents.parse import Block, BlockKind, ParsedSection, parse_document

_BREAK = re.compile(r"\r\n|\r|\n")


def _section(*blocks: tuple[BlockKind, str], first_line: int = 10) -> ParsedSection:
    built: list[Block] = []
    line = first_line + 1  # the heading is on first_line
    for kind, text in blocks:
        rows = len(_BREAK.split(text))
        built.append(Block(kind, text, line, line + rows - 1))
        line += rows + 1
    return ParsedSection(
        key="ops",
        title="Ops",
        level=1,
        parent_key=None,
        breadcrumb=("Guide", "Ops"),
        start_line=first_line,
        end_line=line,
        blocks=tuple(built),
    )


def _squash(text: str) -> str:
    return "".join(text.split())


def _check_lines(section: ParsedSection, chunks: list[ChunkText]) -> None:
    assert [c.ord for c in chunks] == list(range(len(chunks)))
    previous = section.start_line
    for chunk in chunks:
        assert section.start_line <= chunk.start_line <= chunk.end_line <= section.end_line
        assert chunk.start_line >= previous
        previous = chunk.start_line


def test_a_section_without_blocks_gives_no_chunks() -> None:
    assert chunk_section(_section()) == []


def test_small_blocks_are_packed_into_one_chunk_with_their_line_range() -> None:
    section = _section(("paragraph", "Intro."), ("code", "```\nx\n```"), ("list", "- a\n- b"))
    chunks = chunk_section(section)
    assert chunks == [
        ChunkText("Intro.\n\n```\nx\n```\n\n- a\n- b", 11, section.blocks[-1].end_line, 0)
    ]


def test_a_block_that_does_not_fit_beside_the_others_starts_the_next_chunk() -> None:
    section = _section(("paragraph", "a" * 60), ("paragraph", "b" * 60), ("paragraph", "c" * 30))
    chunks = chunk_section(section, max_chars=100)
    assert [c.text for c in chunks] == ["a" * 60, "b" * 60 + "\n\n" + "c" * 30]
    assert [c.ord for c in chunks] == [0, 1]
    assert chunks[1].start_line == section.blocks[1].start_line


def test_a_block_that_fits_is_never_split() -> None:
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(20)) + "\n```"
    section = _section(("paragraph", "p" * 50), ("code", code))
    chunks = chunk_section(section, max_chars=len(code))
    assert chunks[-1].text == code


def test_a_big_code_fence_is_split_at_lines_and_every_piece_is_a_closed_fence() -> None:
    body = [f"print('line {i:03}')" for i in range(60)]
    code = "```python\n" + "\n".join(body) + "\n```"
    section = _section(("code", code))
    chunks = chunk_section(section, max_chars=300)
    assert len(chunks) > 3
    for chunk in chunks:
        rows = chunk.text.split("\n")
        assert rows[0] == "```python" and rows[-1] == "```"
        assert len(chunk.text) <= 300
    inner = [row for c in chunks for row in c.text.split("\n")[1:-1]]
    assert inner == body
    assert chunks[0].start_line == section.blocks[0].start_line
    assert chunks[-1].end_line == section.blocks[0].end_line


def test_an_unclosed_code_fence_piece_gets_a_closing_fence() -> None:
    code = "~~~~\n" + "\n".join("y" * 30 for _ in range(10))
    chunks = chunk_section(_section(("code", code)), max_chars=120)
    assert all(c.text.startswith("~~~~\n") and c.text.endswith("\n~~~~") for c in chunks)


def test_a_big_table_is_split_at_rows_and_every_piece_repeats_the_header() -> None:
    rows = [f"| host-{i:02} | {i * 10} |" for i in range(40)]
    table = "| host | weight |\n|------|--------|\n" + "\n".join(rows)
    section = _section(("table", table))
    chunks = chunk_section(section, max_chars=200)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.startswith("| host | weight |\n|------|--------|\n")
        assert len(chunk.text) <= 200
    assert [r for c in chunks for r in c.text.split("\n")[2:]] == rows
    assert chunks[0].start_line == section.blocks[0].start_line


def test_a_big_list_is_split_at_line_boundaries() -> None:
    items = [f"- item number {i} with some words" for i in range(30)]
    chunks = chunk_section(_section(("list", "\n".join(items))), max_chars=150)
    assert [line for c in chunks for line in c.text.split("\n")] == items
    assert all(len(c.text) <= 150 for c in chunks)


def test_a_big_paragraph_is_split_at_sentence_ends() -> None:
    sentences = [f"Sentence {i} says something useful about rollbacks." for i in range(12)]
    chunks = chunk_section(_section(("paragraph", " ".join(sentences))), max_chars=160)
    assert len(chunks) > 1
    assert all(c.text.endswith(".") for c in chunks)
    assert " ".join(c.text for c in chunks) == " ".join(sentences)


def test_a_paragraph_without_sentence_ends_is_split_at_spaces_then_anywhere() -> None:
    words = " ".join(["word"] * 100)
    chunks = chunk_section(_section(("paragraph", words)), max_chars=50)
    assert all(len(c.text) <= 50 and not c.text.endswith(" ") for c in chunks)
    assert " ".join(c.text for c in chunks) == words
    blob = "x" * 130
    assert [c.text for c in chunk_section(_section(("paragraph", blob)), max_chars=50)] == [
        "x" * 50,
        "x" * 50,
        "x" * 30,
    ]


def test_pieces_of_a_wrapped_paragraph_report_their_own_lines() -> None:
    text = "\n".join(f"Line {i} of the paragraph is here." for i in range(10))
    section = _section(("paragraph", text))
    chunks = chunk_section(section, max_chars=80)
    assert chunks[0].start_line == section.blocks[0].start_line
    assert chunks[-1].end_line == section.blocks[0].end_line
    assert all(b.start_line > a.end_line for a, b in itertools.pairwise(chunks))


def test_max_chars_must_be_positive() -> None:
    with pytest.raises(ValueError):
        chunk_section(_section(("paragraph", "x")), max_chars=0)


def test_embedding_text_puts_the_breadcrumb_on_the_first_line() -> None:
    assert embedding_text(("Guide", "Deploy", "Rollback"), "Run it.") == (
        "Guide > Deploy > Rollback\nRun it."
    )
    assert embedding_text((), "Run it.") == "Run it."


# --- properties ---------------------------------------------------------------------------------

prose_text = (
    st.lists(st.sampled_from([*"abc xyz.!?\n\t\r", "\r\n", "é", "語", "word "]), max_size=150)
    .map("".join)
    .filter(lambda t: bool(t.strip()))
)
prose_blocks = st.lists(
    st.tuples(st.sampled_from(["paragraph", "list", "quote", "html", "other", "code"]), prose_text),
    max_size=8,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=prose_blocks, max_chars=st.integers(min_value=8, max_value=300))
def test_chunks_hold_exactly_the_blocks_text_within_the_size_limit(
    blocks: list[tuple[BlockKind, str]], max_chars: int
) -> None:
    section = _section(*blocks)
    chunks = chunk_section(section, max_chars=max_chars)
    assert _squash("".join(c.text for c in chunks)) == _squash("".join(t for _, t in blocks))
    assert all(len(c.text) <= max_chars for c in chunks)
    _check_lines(section, chunks)


row_text = st.text(alphabet=st.sampled_from(list("abc 123.|-")), max_size=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(row_text, min_size=1, max_size=30),
    fence=st.sampled_from(["```", "````sh", "~~~"]),
    closed=st.booleans(),
    max_chars=st.integers(min_value=10, max_value=250),
)
def test_code_pieces_are_fenced_and_together_hold_the_code(
    rows: list[str], fence: str, closed: bool, max_chars: int
) -> None:
    closing = fence.rstrip("sh")
    code = "\n".join([fence, *rows] + ([closing] if closed else []))
    section = _section(("code", code))
    chunks = chunk_section(section, max_chars=max_chars)
    overhead = len(fence) + len(closing) + 2
    for chunk in chunks:
        assert len(chunk.text) <= max_chars + overhead
    _check_lines(section, chunks)
    if len(code) <= max_chars:
        assert [c.text for c in chunks] == [code]
    elif _squash("".join(rows)):
        lines = [c.text.split("\n") for c in chunks]
        assert all(ls[0] == fence and ls[-1].startswith(closing) for ls in lines)
        # a chunk may hold two pieces of the block when cutting a long row freed the room
        code_rows = [r for ls in lines for r in ls if r != fence and not r.startswith(closing)]
        assert _squash("".join(code_rows)) == _squash("".join(rows))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(row_text, min_size=1, max_size=30),
    max_chars=st.integers(min_value=10, max_value=250),
)
def test_table_pieces_repeat_the_header_and_together_hold_the_rows(
    rows: list[str], max_chars: int
) -> None:
    header = ["| name | value |", "|------|-------|"]
    table = "\n".join(header + rows)
    section = _section(("table", table))
    chunks = chunk_section(section, max_chars=max_chars)
    overhead = len(header[0]) + len(header[1]) + 2
    for chunk in chunks:
        assert len(chunk.text) <= max_chars + overhead
    _check_lines(section, chunks)
    if len(table) > max_chars and _squash("".join(rows)):
        assert all(c.text.split("\n")[:2] == header for c in chunks)
        body = [r for c in chunks for r in c.text.split("\n")[2:]]
        assert _squash("".join(body)) == _squash("".join(rows))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.lists(
        st.sampled_from(
            [
                "# Title",
                "## Sub",
                "Some prose. More prose here!",
                "```",
                "code line",
                "| a | b |",
                "|---|---|",
                "| 1 | 2 |",
                "- item",
                "> quote",
                "",
            ]
        ),
        max_size=60,
    ).map("\n".join),
    max_chars=st.integers(min_value=20, max_value=200),
)
def test_chunks_of_parsed_sections_stay_inside_their_section(text: str, max_chars: int) -> None:
    for section in parse_document("a.md", text).sections:
        chunks = chunk_section(section, max_chars=max_chars)
        _check_lines(section, chunks)
        if not section.blocks:
            assert chunks == []
        overhead = (
            max(
                (2 * len(r[0]) + len(r[min(1, len(r) - 1)]) + len(r[-1]) + 3)
                for r in (b.text.split("\n") for b in section.blocks)
            )
            if section.blocks
            else 0
        )
        assert all(len(c.text) <= max_chars + overhead for c in chunks)
        everything = _squash("".join(c.text for c in chunks))
        position = 0
        for char in _squash("".join(b.text for b in section.blocks)):
            position = everything.index(char, position) + 1
