"""The in-process BM25 index: ranking, stemming, updates, deletes and merges."""

from __future__ import annotations

import math
from pathlib import Path

from graphmem.indexes.keywords import (
    MAX_SEGMENTS,
    KeywordIndex,
    load_index,
    query_terms,
    save_index,
)
from graphmem.text import index_text, query_text


def _index(texts: dict[str, str]) -> KeywordIndex:
    index = KeywordIndex()
    index.add(list(texts), [index_text(t) for t in texts.values()])
    return index


def _ids(index: KeywordIndex, query: str, top: int = 10) -> list[str]:
    return [memory_id for memory_id, _ in index.search(query_text(query), top=top)]


def test_a_rare_term_outranks_a_common_one_and_unrelated_texts_are_not_returned() -> None:
    index = _index(
        {
            "a": "the billing service timed out",
            "b": "the billing service returned 502",
            "c": "the search service timed out",
            "d": "lunch menu for friday",
        }
    )
    assert _ids(index, "billing 502") == ["b", "a"]
    assert "d" not in _ids(index, "service timed out")


def test_scores_follow_bm25_with_kuzu_parameters() -> None:
    index = _index({"a": "deploy rollback", "b": "deploy", "c": "cache"})
    (_, score), *_ = index.search(query_text("rollback"), top=1)
    n, df, avg = 3, 1, 4 / 3  # "a" has 2 terms, "b" and "c" one each
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = idf * 1 * 2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * 2 / avg))
    assert math.isclose(score, expected, rel_tol=1e-5)


def test_words_are_stemmed_and_stopwords_ignored() -> None:
    index = _index({"a": "we were deploying the migrations", "b": "the of and"})
    assert _ids(index, "deployed migration") == ["a"]
    assert query_terms(query_text("the deployments")) == ["deploy"]
    assert _ids(index, "the and") == []


def test_numbers_and_codes_match_exactly() -> None:
    index = _index({"a": "PAY-123 failed with 8043", "b": "PAY-124 failed with 80"})
    assert _ids(index, "8043") == ["a"]
    assert _ids(index, "PAY-124")[0] == "b"  # "pay" alone matches both


def test_updating_replaces_the_old_text_and_deleting_hides_it() -> None:
    index = _index({"a": "postgres connection pool", "b": "redis cache"})
    index.add(["a"], [index_text("kafka consumer lag")])
    assert _ids(index, "postgres") == []
    assert _ids(index, "kafka") == ["a"]
    index.remove(["b"])
    assert _ids(index, "redis") == []
    assert len(index) == 1


def test_many_small_additions_merge_and_keep_every_text_findable() -> None:
    index = _index({f"old{i}": f"old note number {i} about caching" for i in range(50)})
    for i in range(MAX_SEGMENTS * 3):
        index.add([f"new{i}"], [index_text(f"incident {i} in the ledger")])
    index.remove([f"old{i}" for i in range(40)])  # most old rows dead: the next merge drops them
    for i in range(MAX_SEGMENTS * 2):
        index.add([f"later{i}"], [index_text("ledger replay")])
    assert len(index) == 10 + MAX_SEGMENTS * 5
    assert set(_ids(index, "ledger", top=100)) == {
        *(f"new{i}" for i in range(MAX_SEGMENTS * 3)),
        *(f"later{i}" for i in range(MAX_SEGMENTS * 2)),
    }
    assert set(_ids(index, "caching", top=100)) == {f"old{i}" for i in range(40, 50)}
    assert len(index.ids) < 50 + MAX_SEGMENTS * 5  # dead rows were compacted away


def test_an_empty_index_and_an_empty_text_find_nothing() -> None:
    index = KeywordIndex()
    assert index.search("anything", top=5) == []
    index.add(["a"], [None])
    assert index.search(query_text("anything"), top=5) == []


def test_a_saved_index_finds_every_term_after_loading_and_still_takes_additions(
    tmp_path: Path,
) -> None:
    texts = {
        "a": "aardvark migration broke the billing service",
        "b": "café résumé über naïve zebra",
        "c": "PAY-123 fixed in v2 with a 502 retry",
    }
    save_index(_index(texts), tmp_path)
    loaded = load_index(tmp_path)
    for memory_id, text in texts.items():
        for word in text.split():
            if query_terms(query_text(word)):
                assert memory_id in _ids(loaded, word), word
    assert _ids(loaded, "unknownword") == []
    (tmp_path / "again").mkdir()
    save_index(loaded, tmp_path / "again")  # saved again without ever being unpacked
    assert (tmp_path / "again" / "keywords.vocab").read_bytes() == (
        tmp_path / "keywords.vocab"
    ).read_bytes()
    loaded.add(["d"], [index_text("zebra crossing")])
    assert sorted(_ids(loaded, "zebra")) == ["b", "d"]
    assert _ids(loaded, "aardvark") == ["a"]
