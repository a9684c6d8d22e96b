"""Markup pasted into a memory is text about something else: its tags are not things."""

from __future__ import annotations

import pytest
from graphmem.extractors.mentions import tag_fragment
from graphmem.extractors.spacy_extractor import SpacyExtractor


@pytest.mark.parametrize(
    "text",
    [
        "Payload 0: <script>window.pwned = 1</script>",
        '<a href="javascript:x">click me</a> and <style>body { display: none }</style>',
        '<svg onload="w"><script>x</script></svg>',
        "see <br/> then </div> and </main> then <img src=x>",
    ],
)
def test_html_tags_are_not_extracted_as_entities(
    rules_extractor: SpacyExtractor, text: str
) -> None:
    names = [e.name for e in rules_extractor.extract([text])[0].entities]
    assert not [n for n in names if n.startswith(("<", "/"))], names


def test_paths_named_like_no_tag_are_still_paths(rules_extractor: SpacyExtractor) -> None:
    text = "Edit /etc/nginx/nginx.conf and src/app.py, then run /usr/bin/env or /deploy"
    names = {e.name for e in rules_extractor.extract([text])[0].entities}
    assert {"/etc/nginx/nginx.conf", "src/app.py", "/usr/bin/env"} <= names


def test_a_tag_fragment_is_told_from_a_name() -> None:
    fragments = ["</script>", "/script", "/a", "/STYLE", "<svg onload", "<img src=x>", "</main>"]
    names = ["/usr/bin", "/deploy", "a/b", "<=", "C++", "/api", "script"]
    assert all(tag_fragment(f) for f in fragments)
    assert not any(tag_fragment(n) for n in names)
