"""The second entity-resolution set (Wikipedia passages of 2WikiMultihopQA) is well formed and
names what its passages say, a multi-hop source loads its passage as "title.\\ntext" into one store
per corpus, and a label file other than the default is read and scored on its own."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
from graphmem.extractors import ExtractedEntity, Extraction, normalise

import eval.__main__ as cli
from eval import entities

REPO = Path(__file__).parents[2]
WIKI = REPO / "eval" / "data" / "entity_resolution_wiki.jsonl"
FIRST = REPO / "eval" / "data" / "entity_resolution.jsonl"
BENCH = REPO / ".." / "shared" / "bench"
CORPUS = "multihop/2wikimultihopqa/corpus.json"


def _labels() -> list[entities.Label]:
    return entities.load_labels(WIKI)[1]


def test_the_header_says_how_passages_and_mentions_were_drawn_and_judged() -> None:
    header, _ = entities.load_labels(WIKI)

    assert {"about", "rule", "sampling"} <= set(header)
    assert "title.\\ntext" in header["about"]


def test_there_are_enough_mentions_and_things_named_more_than_one_way() -> None:
    labels = _labels()
    sizes = Counter(label.entity for label in labels)

    assert len(labels) >= 200 and {label.store for label in labels} == {"2wiki"}
    assert sum(1 for n in sizes.values() if n > 1) >= 40
    assert len({label.source for label in labels}) >= 60  # many passages, one store


def test_each_mention_is_labelled_once_and_named_for_its_store() -> None:
    labels = _labels()
    rows = [json.loads(line) for line in WIKI.read_text(encoding="utf-8").splitlines()[1:]]

    assert all(set(row) == {"source", "mention", "entity"} for row in rows)
    assert max(Counter(label.mention.casefold() for label in labels).values()) == 1
    for label in labels:
        assert label.source.startswith(CORPUS + "#") and label.mention.strip() == label.mention
        assert label.entity.startswith("2wiki/")


def test_the_set_shares_no_source_with_the_first() -> None:
    first = {label.source.split("#", 1)[0] for label in entities.load_labels(FIRST)[1]}

    assert CORPUS not in first


@pytest.mark.skipif(not (BENCH / CORPUS).is_file(), reason="../shared/bench is not here")
def test_every_mention_is_in_its_passage() -> None:
    labels = _labels()
    store = entities.store_texts(labels, BENCH, None)["2wiki"]
    for label in labels:
        (i,) = store.by_source[label.source]
        assert label.mention.casefold() in store.texts[i].casefold(), label


# -- the multi-hop source kind, on a corpus written here ------------------------------------


def _bench(tmp_path: Path) -> Path:
    corpus = tmp_path / "bench" / CORPUS
    corpus.parent.mkdir(parents=True)
    rows = [
        {"title": "Alfred Hitchcock", "text": "Alfred Hitchcock directed Vertigo."},
        {"title": "Unused", "text": "Nobody labels this one."},
        {"title": "Vertigo (film)", "text": "Vertigo is a film by Hitchcock."},
        {"title": "Jr.", "text": "A title that ends a sentence."},
    ]
    corpus.write_text(json.dumps(rows), encoding="utf-8")
    return tmp_path / "bench"


def _write_labels(path: Path, rows: list[tuple[int, str, str]]) -> Path:
    lines = [json.dumps({"about": "test", "rule": [], "sampling": []})]
    lines += [
        json.dumps({"source": f"{CORPUS}#{i}", "mention": m, "entity": f"2wiki/{e}"})
        for i, m, e in rows
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_multihop_source_is_its_corpus_store() -> None:
    assert entities.Label(f"{CORPUS}#3", "x", "2wiki/x").store == "2wiki"
    assert entities.Label("multihop/musique/corpus.json#0", "x", "musique/x").kind == "musique"
    assert entities.Label("notes#n1", "x", "notes/x").store == "notes"


def test_the_labelled_passages_load_as_title_then_text_in_corpus_order(tmp_path: Path) -> None:
    bench = _bench(tmp_path)
    labels = [
        entities.Label(f"{CORPUS}#{i}", m, f"2wiki/{m}")
        for i, m in ((3, "Jr."), (2, "Hitchcock"), (0, "Alfred Hitchcock"))
    ]

    stores = entities.store_texts(labels, bench, None)

    assert list(stores) == ["2wiki"]
    store = stores["2wiki"]
    assert store.texts == [
        "Alfred Hitchcock.\nAlfred Hitchcock directed Vertigo.",
        "Vertigo (film).\nVertigo is a film by Hitchcock.",
        "Jr.\nA title that ends a sentence.",
    ]
    assert store.by_source == {f"{CORPUS}#0": [0], f"{CORPUS}#2": [1], f"{CORPUS}#3": [2]}


class _Names:
    """An extractor that finds the given names wherever they occur: no model needed."""

    name = "names"

    def __init__(self, names: Sequence[str]) -> None:
        self.names = names

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return [
            Extraction(
                entities=[
                    ExtractedEntity(name=n, norm=normalise(n), label="person")
                    for n in self.names
                    if n in text
                ],
                extractor=self.name,
            )
            for text in texts
        ]


def test_a_label_file_other_than_the_default_is_read_and_scored_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _bench(tmp_path)
    labels = _write_labels(
        tmp_path / "wiki.jsonl",
        [
            (0, "Alfred Hitchcock", "Alfred Hitchcock"),
            (0, "Vertigo", "Vertigo (film)"),
            (2, "Hitchcock", "Alfred Hitchcock"),
        ],
    )
    monkeypatch.setattr(
        entities, "get_extractor", lambda _: _Names(["Alfred Hitchcock", "Hitchcock", "Vertigo"])
    )
    out = tmp_path / "out.json"

    code = cli.main(
        ["entities", "--labels", str(labels), "--bench", str(bench), "--embedding", "hash",
         "--out", str(out)]
    )  # fmt: skip

    assert code == 0
    result = json.loads(out.read_text())
    assert result["labels"] == str(labels) and result["mentions"] == 3
    assert set(result) >= {"overall", "2wiki"} and "docs" not in result
    assert result["2wiki"]["found"] == 3 and result["2wiki"]["gold_pairs"] == 1
    assert result["overall"] == {
        k: v for k, v in result["2wiki"].items() if k in result["overall"]
    }  # no docs or LoCoMo here: the headline is the set's own store


def test_the_results_file_is_named_after_the_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _bench(tmp_path)
    labels = _write_labels(tmp_path / "my_set.jsonl", [(0, "Vertigo", "Vertigo (film)")])
    monkeypatch.setattr(entities, "get_extractor", lambda _: _Names(["Vertigo"]))
    monkeypatch.chdir(tmp_path)

    code = cli.main(
        ["entities", "--labels", str(labels), "--bench", str(bench), "--embedding", "hash"]
    )

    assert code == 0
    assert json.loads((tmp_path / "eval" / "results" / "my_set.json").read_text())["mentions"] == 1
