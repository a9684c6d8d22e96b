"""Parsing project documents into keyed sections of whole blocks, for every supported format."""

from __future__ import annotations

import re
from textwrap import dedent

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem.documents.parse import ParsedDocument, ParsedSection, parse_document

_BREAK = re.compile(r"\r\n|\r|\n")


def _md(text: str) -> str:
    return dedent(text).lstrip("\n")


def _section(doc: ParsedDocument, key: str) -> ParsedSection:
    found = [s for s in doc.sections if s.key == key]
    assert found, f"no section {key!r} in {[s.key for s in doc.sections]}"
    return found[0]


def _keys(doc: ParsedDocument) -> list[str]:
    return [s.key for s in doc.sections]


# --- markdown ---------------------------------------------------------------------------------


def test_front_matter_gives_the_title_and_the_metadata() -> None:
    doc = parse_document(
        "docs/deploy.md",
        _md("""
            ---
            title: Deploying billing
            status: accepted
            tags: [deploy, k8s]
            ---
            # Deploy

            Text.
            """),
    )
    assert doc.title == "Deploying billing"
    assert doc.metadata == {
        "title": "Deploying billing",
        "status": "accepted",
        "tags": ["deploy", "k8s"],
    }
    assert doc.warnings == ()
    assert _section(doc, "deploy").breadcrumb == ("Deploying billing", "Deploy")


def test_invalid_front_matter_is_a_warning_not_an_error() -> None:
    doc = parse_document("a.md", "---\ntitle: [unclosed\n---\n# Real title\n\nBody.\n")
    assert doc.metadata == {}
    assert doc.title == "Real title"
    assert any("front matter" in w for w in doc.warnings)


def test_front_matter_that_is_not_a_mapping_is_ignored_with_a_warning() -> None:
    doc = parse_document("a.md", "---\n- a\n- b\n---\nBody.\n")
    assert doc.metadata == {}
    assert doc.warnings


def test_the_first_h1_is_the_title_when_there_is_no_front_matter_title() -> None:
    doc = parse_document("docs/x.md", "## Intro\n\nhi\n\n# The Guide\n\ntext\n")
    assert doc.title == "The Guide"


def test_a_file_without_headings_is_titled_after_its_humanised_name() -> None:
    doc = parse_document("docs/runbooks/db-failover.md", "Just text.\n")
    assert doc.title == "Db failover"
    assert [(s.key, s.level, s.title) for s in doc.sections] == [("", 0, "Db failover")]


def test_text_before_the_first_heading_is_the_level_0_section_and_parents_top_sections() -> None:
    doc = parse_document("a.md", "Preamble.\n\n# One\n\nBody.\n")
    root, one = doc.sections
    assert (root.key, root.level, root.parent_key, root.start_line, root.end_line) == (
        "",
        0,
        None,
        1,
        2,
    )
    assert one.parent_key == ""
    assert one.breadcrumb == ("One",)


def test_top_sections_have_no_parent_when_there_is_no_text_before_the_first_heading() -> None:
    doc = parse_document("a.md", "# One\n\nBody.\n\n# Two\n\nMore.\n")
    assert [(s.key, s.parent_key) for s in doc.sections] == [("one", None), ("two", None)]


def test_setext_headings_are_sections() -> None:
    doc = parse_document("a.md", "Title\n=====\n\nIntro.\n\nUsage\n-----\n\nRun it.\n")
    assert [(s.key, s.level, s.title) for s in doc.sections] == [
        ("title", 1, "Title"),
        ("title/usage", 2, "Usage"),
    ]
    assert _section(doc, "title/usage").start_line == 6


def test_sections_nest_by_level_and_a_skipped_level_nests_under_the_nearest_shallower() -> None:
    doc = parse_document(
        "a.md",
        _md("""
            # Guide

            intro

            ### Deep

            deep text

            ## Deploying

            text

            #### Rolling back

            steps

            ## Testing

            more
            """),
    )
    assert [(s.key, s.parent_key, s.level) for s in doc.sections] == [
        ("guide", None, 1),
        ("guide/deep", "guide", 3),
        ("guide/deploying", "guide", 2),
        ("guide/deploying/rolling-back", "guide/deploying", 4),
        ("guide/testing", "guide", 2),
    ]
    assert _section(doc, "guide/deploying/rolling-back").breadcrumb == (
        "Guide",
        "Deploying",
        "Rolling back",
    )


def test_duplicate_sibling_headings_get_numbered_keys_in_document_order() -> None:
    doc = parse_document(
        "a.md",
        "# A\n\n## Setup\n\nx\n\n## Setup\n\ny\n\n# B\n\n## Setup\n\nz\n\n## Setup!\n\nw\n",
    )
    assert _keys(doc) == ["a", "a/setup", "a/setup-2", "b", "b/setup", "b/setup-2"]


def test_keys_stay_the_same_when_text_changes_or_a_later_section_is_added() -> None:
    before = parse_document("a.md", "# A\n\n## Setup\n\nx\n\n## Setup\n\ny\n")
    after = parse_document(
        "a.md",
        "# A\n\nNew intro paragraph.\n\n## Setup\n\nx changed\n\nmore\n\n## Setup\n\ny\n\n"
        "## Setup\n\nadded later\n\n## Other\n\nz\n",
    )
    assert set(_keys(before)) <= set(_keys(after))
    assert _section(after, "a/setup-2").blocks[0].text == "y"


def test_keys_are_slugs_that_keep_unicode_letters() -> None:
    doc = parse_document("a.md", "# Déploiement & Rollback (v2)\n\nx\n\n## Über_Schritte\n\ny\n")
    assert _keys(doc) == ["déploiement-rollback-v2", "déploiement-rollback-v2/über-schritte"]


def test_a_heading_with_no_text_has_a_placeholder_key() -> None:
    doc = parse_document("a.md", "# !!!\n\nx\n")
    assert _keys(doc) == ["section"]


def test_a_heading_inside_a_code_fence_is_not_a_section() -> None:
    doc = parse_document(
        "a.md", "# Setup\n\n```bash\n# install the deps\npip install x\n```\n\nDone.\n"
    )
    assert _keys(doc) == ["setup"]
    assert [b.kind for b in doc.sections[0].blocks] == ["code", "paragraph"]


def test_code_fences_tables_lists_and_quotes_are_whole_blocks() -> None:
    text = _md("""
        # Ops

        Intro paragraph
        on two lines.

        ```python
        def f():

            return 1
        ```

        | a | b |
        |---|---|
        | 1 | 2 |

        - one
        - two

          still two

        > quoted
        > text

        <details>
        x
        </details>
        """)
    doc = parse_document("a.md", text)
    blocks = doc.sections[0].blocks
    assert [b.kind for b in blocks] == ["paragraph", "code", "table", "list", "quote", "html"]
    code = blocks[1]
    assert code.text == "```python\ndef f():\n\n    return 1\n```"
    assert (code.start_line, code.end_line) == (6, 10)
    assert blocks[3].text == "- one\n- two\n\n  still two"
    assert all(b.text in text for b in blocks)


def test_a_heading_without_content_is_kept_only_when_it_has_subsections() -> None:
    doc = parse_document("a.md", "# A\n\n## Empty\n\n## Full\n\ntext\n\n# B\n")
    assert _keys(doc) == ["a", "a/full"]
    assert doc.sections[0].blocks == ()


def test_a_section_ends_on_the_line_before_the_next_heading_of_any_level() -> None:
    doc = parse_document("a.md", "# A\n\nx\n\n### C\n\ny\n\n## B\n\nz\n")
    assert [(s.start_line, s.end_line) for s in doc.sections] == [(1, 4), (5, 8), (9, 11)]


def test_an_unclosed_fence_is_reported_and_the_headings_after_it_still_count() -> None:
    text = "# Setup\n\n```bash\npip install x\nmake\n\n## Running\n\nRun it.\n\n## Testing\n\nx\n"
    doc = parse_document("a.md", text)
    assert doc.warnings == ("line 3: code fence never closed",)
    assert _keys(doc) == ["setup", "setup/running", "setup/testing"]
    code = _section(doc, "setup").blocks[0]
    assert (code.kind, code.text) == ("code", "```bash\npip install x\nmake")
    assert _section(doc, "setup/running").blocks[0].text == "Run it."


def test_an_unclosed_fence_with_no_heading_after_it_is_code_to_the_end() -> None:
    doc = parse_document("a.md", "# A\n\n~~~\nx\n\ny\n")
    assert doc.warnings == ("line 3: code fence never closed",)
    assert doc.sections[0].blocks[-1].text == "~~~\nx\n\ny"


def test_a_closed_fence_at_the_end_of_the_file_gives_no_warning() -> None:
    assert parse_document("a.md", "# A\n\n```\nx\n```").warnings == ()


def test_mdx_import_and_export_lines_are_other_blocks() -> None:
    doc = parse_document(
        "docs/page.mdx",
        "import Tabs from '@theme/Tabs'\nexport const meta = {a: 1}\n\n# Page\n\n<Tabs>\nx\n</Tabs>\n\n"
        "Text.\n",
    )
    root, page = doc.sections
    assert [(b.kind, b.start_line) for b in root.blocks] == [("other", 1)]
    assert [b.kind for b in page.blocks] == ["html", "paragraph"]


def test_windows_line_endings_keep_block_texts_exact_and_lines_right() -> None:
    text = "# A\r\n\r\nOne\r\ntwo\r\n\r\n## B\r\n\r\nthree\r\n"
    doc = parse_document("a.md", text)
    block = doc.sections[0].blocks[0]
    assert (block.text, block.start_line, block.end_line) == ("One\r\ntwo", 3, 4)
    assert _section(doc, "a/b").start_line == 6


def test_an_empty_file_has_no_sections() -> None:
    doc = parse_document("a.md", "")
    assert doc.sections == () and doc.title == "A"


# --- rst and txt ------------------------------------------------------------------------------


RST = """\
=========
 Runbook
=========

Intro text.

Failover
========

Check the replica lag::

    SELECT now() - pg_last_xact_replay_timestamp();
    -- should be small

* stop writes
* promote

  then wait

Details
-------

.. code-block:: bash

   pg_ctl promote

Rollback
========

Undo it.
"""


def test_rst_titles_take_their_levels_from_the_order_of_adornment_styles() -> None:
    doc = parse_document("docs/runbook.rst", RST)
    assert doc.title == "Runbook"
    assert [(s.key, s.level) for s in doc.sections] == [
        ("runbook", 1),
        ("runbook/failover", 2),
        ("runbook/failover/details", 3),
        ("runbook/rollback", 2),
    ]


def test_rst_literal_blocks_are_code_and_bullet_lists_are_lists() -> None:
    doc = parse_document("docs/runbook.rst", RST)
    failover = _section(doc, "runbook/failover")
    assert [b.kind for b in failover.blocks] == ["paragraph", "code", "list"]
    assert failover.blocks[1].text.strip().startswith("SELECT now()")
    assert failover.blocks[2].text.endswith("then wait")
    details = _section(doc, "runbook/failover/details")
    assert [b.kind for b in details.blocks] == ["code"]


def test_txt_is_one_section_of_paragraphs_split_on_blank_lines() -> None:
    doc = parse_document("notes/todo.txt", "first para\nstill first\n\n\nsecond\n")
    assert [(s.key, s.level) for s in doc.sections] == [("", 0)]
    assert [(b.kind, b.text) for b in doc.sections[0].blocks] == [
        ("paragraph", "first para\nstill first"),
        ("paragraph", "second"),
    ]


def test_txt_with_underlined_headings_is_read_like_rst() -> None:
    doc = parse_document(
        "notes.txt", "Notes\n=====\n\nintro\n\nSetup\n-----\n\nstep one\n\nLater\n-----\n\nx\n"
    )
    assert _keys(doc) == ["notes", "notes/setup", "notes/later"]


def test_a_dashed_line_inside_a_txt_paragraph_is_not_an_underline() -> None:
    doc = parse_document("a.txt", "line one\nline two\n----------\nline three\n")
    assert [s.key for s in doc.sections] == [""]


# --- config -----------------------------------------------------------------------------------


def test_a_multi_document_yaml_file_has_a_section_per_manifest() -> None:
    text = _md("""
        # billing
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: billing-api
        spec:
          replicas: 3
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: billing-api
        ---
        apiVersion: v1
        kind: ConfigMap
        data:
          a: b
        """)
    doc = parse_document("k8s/billing.yaml", text)
    assert [(s.title, s.key, s.level) for s in doc.sections] == [
        ("Deployment billing-api", "deployment-billing-api", 1),
        ("Service billing-api", "service-billing-api", 1),
        ("ConfigMap", "configmap", 1),
    ]
    assert all(b.kind == "code" for s in doc.sections for b in s.blocks)
    assert doc.sections[1].start_line == 8
    assert doc.title == "Billing"


def test_a_yaml_mapping_has_a_section_per_top_level_key_with_its_comments() -> None:
    text = "# how many\nreplicas: 3\n\n# the image to run\nimage:\n  repo: x\n  tag: y\n"
    doc = parse_document("charts/x/values.yaml", text)
    assert [(s.title, s.start_line, s.end_line) for s in doc.sections] == [
        ("replicas", 1, 3),
        ("image", 4, 7),
    ]
    assert doc.sections[1].blocks[0].text == "# the image to run\nimage:\n  repo: x\n  tag: y"


def test_bad_yaml_falls_back_to_one_section_with_a_warning() -> None:
    text = "image: {{ .Values.image }}\nports: [\n  80\n"
    doc = parse_document("charts/x/templates/deploy.yaml", text)
    assert [(s.key, s.level) for s in doc.sections] == [("", 0)]
    assert doc.warnings and "YAML" in doc.warnings[0]


def test_terraform_has_a_section_per_top_level_block() -> None:
    text = _md("""
        terraform {
          required_version = ">= 1.5"
        }

        # logs live 90 days
        resource "aws_s3_bucket" "logs" {
          bucket = "acme-logs"
          policy = <<EOF
        resource "not" "a_block" {
        EOF
        }

        module "vpc" {
          source = "./vpc"
        }
        """)
    doc = parse_document("infra/main.tf", text)
    assert [(s.title, s.key) for s in doc.sections] == [
        ("terraform", "terraform"),
        ("resource aws_s3_bucket.logs", "resource-aws-s3-bucket-logs"),
        ("module vpc", "module-vpc"),
    ]
    assert doc.sections[1].blocks[0].text.startswith("# logs live 90 days\nresource")


@pytest.mark.parametrize("path", ["Dockerfile", "Makefile", "pyproject.toml", "setup.cfg"])
def test_other_config_files_are_one_section_of_code_split_on_blank_lines(path: str) -> None:
    doc = parse_document(path, "a = 1\nb = 2\n\n\nc = 3\n")
    assert [(s.key, s.level) for s in doc.sections] == [("", 0)]
    assert [(b.kind, b.text) for b in doc.sections[0].blocks] == [
        ("code", "a = 1\nb = 2"),
        ("code", "c = 3"),
    ]


# --- properties ---------------------------------------------------------------------------------

PATHS = [
    "docs/a.md",
    "docs/a.mdx",
    "a.markdown",
    "docs/a.rst",
    "notes.txt",
    "k8s/a.yaml",
    "ci.yml",
    "main.tf",
    "prod.tfvars",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "Dockerfile",
    "Makefile",
    "Jenkinsfile",
]
FRAGMENTS = [
    "# Title",
    "## Sub",
    "### Deep",
    "#",
    "Setext",
    "=====",
    "-----",
    "~~~~~",
    "```",
    "````python",
    "~~~",
    "| a | b |",
    "|---|---|",
    "- item",
    "  - nested",
    "1. first",
    "> quote",
    "<div>",
    "</div>",
    "---",
    "...",
    "title: x",
    "key: [1, 2",
    "  child: {a: 1}",
    "import X from 'y'",
    'resource "aws_s3_bucket" "logs" {',
    "}",
    "x = <<EOF",
    "EOF",
    "Text::",
    "    indented code",
    ".. code-block:: python",
    "* bullet",
    "",
    " ",
    "\t",
    "plain words here.",
]
structured = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=40
).flatmap(
    lambda rows: st.lists(
        st.sampled_from(["\n", "\r\n", "\r"]), min_size=len(rows), max_size=len(rows)
    ).map(lambda breaks: "".join(r + b for r, b in zip(rows, breaks, strict=True)))
)


def _line_count(text: str) -> int:
    if not text:
        return 0
    return len(_BREAK.split(text)) - (1 if text.endswith(("\n", "\r")) else 0)


def _check(path: str, text: str) -> None:
    doc = parse_document(path, text)
    total = _line_count(text)
    previous_end = 0
    keys = [s.key for s in doc.sections]
    assert len(keys) == len(set(keys))
    assert doc.title
    for section in doc.sections:
        assert previous_end < section.start_line <= section.end_line <= total
        previous_end = section.end_line
        assert section.parent_key is None or section.parent_key in keys
        assert (section.level == 0) == (section.key == "")
        last = section.start_line - 1
        for block in section.blocks:
            assert block.text.strip()
            assert block.text in text
            assert last < block.start_line <= block.end_line <= section.end_line
            assert len(_BREAK.split(block.text)) == block.end_line - block.start_line + 1
            last = block.end_line
    assert all(isinstance(w, str) for w in doc.warnings)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=300))
def test_any_text_parses_into_ordered_sections_of_exact_blocks(path: str, text: str) -> None:
    _check(path, text)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=structured)
def test_structured_looking_text_parses_into_ordered_sections_of_exact_blocks(
    path: str, text: str
) -> None:
    _check(path, text)
