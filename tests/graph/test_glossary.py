"""The project's glossary (graphmem.aliases.yaml): a file that says which names are one thing. Read
with errors that name the line; applied through the audited corrections, so names resolve as it
says, duplicates it names are merged, a second application changes nothing and steward_undo
takes it back; indexing applies it when it changed; each project resolves by its own."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import InvalidInput
from graphmem.graph.glossary import GLOSSARY_FILE, parse_glossary, read_glossary
from graphmem.service import GraphMemory, open_store
from graphmem.settings import load_settings

TEXTS = [
    "The api uses Postgres.",
    "The api uses PostgreSQL.",
    "The checkout-service depends on Redis for carts.",
    "Mercury deploys the billing-worker.",
]


def write_glossary(gm: GraphMemory, text: str) -> Path:
    path = gm.path.parent / GLOSSARY_FILE  # the project root: the folder of the data dir
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def graph(gm: GraphMemory) -> list[str]:
    """TEXTS remembered and extracted (no glossary yet); their ids in order."""
    ids = [m.id for m in gm.remember_many([{"content": t} for t in TEXTS])]
    gm.index_triples()
    return ids


def named_in(gm: GraphMemory, text: str) -> set[str]:
    """The entities a new memory saying `text` links to, once extracted."""
    memory = gm.remember(text)
    gm.index_triples()
    return {entity_id for _, entity_id, _ in gm.store.entities.mentions_of([memory.id])}


def entities(gm: GraphMemory) -> dict[str, tuple[str, list[str], int]]:
    return {e.id: (e.name, e.aliases, e.mentions) for e in gm.list_entities(limit=100).entities}


# -- reading the file ------------------------------------------------------------------------------


def test_a_glossary_is_read_into_entries_with_their_lines() -> None:
    text = (
        "# names of things in this project, and the other names text uses for them\n"
        "New York City: [NYC, New York, the Big Apple]\n"
        "Logit.io:\n"
        "  - logit\n"
        "Solo:\n"
        "Redis: KeyDB\n"
    )
    glossary = parse_glossary(text, Path("graphmem.aliases.yaml"))
    assert [(e.name, e.aliases, e.line) for e in glossary.entries] == [
        ("New York City", ("NYC", "New York", "the Big Apple"), 2),
        ("Logit.io", ("logit",), 3),
        ("Solo", (), 5),
        ("Redis", ("KeyDB",), 6),
    ]
    assert glossary.entries[0].norm == "new york city"
    assert parse_glossary("# only a comment\n", Path("g.yaml")).entries == ()


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("- NYC\n- New York\n", 1, "a glossary is a mapping of canonical names"),
        ("Redis: [KeyDB]\nYear: [2024]\n", 2, "an alias of 'Year' must be a string, not '2024'"),
        ("Redis: [KeyDB, {a: b}]\n", 1, "an alias of 'Redis' must be a string"),
        ("Redis: [KeyDB]\n'...': [x]\n", 2, "a canonical name is empty"),
        ("Redis: ['  ']\n", 1, "an alias of 'Redis' is empty"),
        (
            "Redis: [KeyDB]\nDragonfly:\n  - keydb\n",
            3,
            "'keydb' (an alias of 'Dragonfly') is already a name of 'Redis' (line 1)",
        ),
        ("Redis: [KeyDB]\nKeyDB: [kdb]\n", 2, "'KeyDB' is already a name of 'Redis' (line 1)"),
        ("Redis: [KeyDB]\nRedis: [Valkey]\n", 2, "'Redis' is listed twice (first on line 1)"),
        ("Redis: [KeyDB\n", 2, "not valid YAML"),
    ],
)
def test_a_bad_glossary_is_refused_naming_its_file_and_line(
    tmp_path: Path, text: str, line: int, says: str
) -> None:
    path = tmp_path / GLOSSARY_FILE
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInput) as refused:
        read_glossary(path)
    assert refused.value.message.startswith(f"{path}:{line}: ")
    assert says in refused.value.message
    assert refused.value.fields == {"path": str(path), "line": line}


def test_no_file_is_no_glossary(gm: GraphMemory) -> None:
    assert read_glossary(gm.path.parent / GLOSSARY_FILE) is None
    report = gm.apply_glossary()
    assert not report.found and report.entries == 0 and not report.changed
    assert report.path == str(gm.path.parent / GLOSSARY_FILE)


# -- applying it -----------------------------------------------------------------------------------


def test_an_alias_the_glossary_adds_makes_later_text_link_to_the_canonical_entity(
    gm: GraphMemory, graph: list[str]
) -> None:
    write_glossary(gm, "Redis: [Valkey]\n")
    report = gm.apply_glossary()
    assert [(n.name, n.entity_id) for n in report.aliased] == [("Valkey", "redis")]
    assert report.audit_ids == [report.aliased[0].audit_id] and report.run
    assert "redis" in named_in(gm, "The cache runs on Valkey.")
    assert "valkey" not in entities(gm)


def test_duplicates_the_glossary_names_are_merged_into_the_canonical_entity(
    gm: GraphMemory, graph: list[str]
) -> None:
    write_glossary(gm, "PostgreSQL: [Postgres, PG]\n")
    report = gm.apply_glossary()
    assert [(n.name, n.merged) for n in report.merged] == [("Postgres", "postgres")]
    assert [n.name for n in report.aliased] == ["PG"]
    assert gm.entity_page("postgresql").mentions == 2
    assert "postgres" not in entities(gm)
    assert "postgresql" in named_in(gm, "Postgres needs a vacuum.")


def test_a_canonical_name_nothing_named_yet_gets_an_entity_the_aliases_merge_into(
    gm: GraphMemory, graph: list[str]
) -> None:
    write_glossary(gm, "Postgres Database: [Postgres, PostgreSQL]\n")
    report = gm.apply_glossary()
    assert [n.entity_id for n in report.created] == ["postgres database"]
    assert sorted(n.merged or "" for n in report.merged) == ["postgres", "postgresql"]
    name, aliases, mentions = entities(gm)["postgres database"]
    assert name == "Postgres Database" and mentions == 2
    assert {"postgres", "postgresql"} <= set(aliases)


def test_applying_it_again_changes_nothing(gm: GraphMemory, graph: list[str]) -> None:
    write_glossary(gm, "PostgreSQL: [Postgres, PG]\nRedis: [Valkey]\n")
    first = gm.apply_glossary()
    assert first.changed
    audited = len(gm.audit_log(limit=100).entries)
    picture = entities(gm)
    again = gm.apply_glossary()
    assert not again.changed and again.run is None and again.audit_ids == []
    assert {n.name for n in again.unchanged} == {"Postgres", "PG", "Valkey"}
    assert len(gm.audit_log(limit=100).entries) == audited
    assert entities(gm) == picture


def test_a_dry_run_shows_what_would_change_and_writes_nothing(
    gm: GraphMemory, graph: list[str]
) -> None:
    write_glossary(gm, "Postgres Database: [Postgres, PostgreSQL, PG]\n")
    picture = entities(gm)
    planned = gm.apply_glossary(dry_run=True)
    assert planned.dry_run and planned.audit_ids == [] and planned.run is None
    assert entities(gm) == picture and gm.audit_log(limit=10).entries == []
    done = gm.apply_glossary()
    for field in ("created", "merged", "aliased", "unchanged"):
        shown = [(n.name, n.entity_id, n.merged) for n in getattr(planned, field)]
        assert shown == [(n.name, n.entity_id, n.merged) for n in getattr(done, field)], field


def test_the_steward_undoes_the_whole_application_by_its_run(
    gm: GraphMemory, graph: list[str]
) -> None:
    picture = entities(gm)
    write_glossary(gm, "Postgres Database: [Postgres, PostgreSQL]\nRedis: [Valkey]\n")
    report = gm.apply_glossary()
    assert report.run is not None and len(report.audit_ids) == 4
    actions = {(e.actor, e.action, e.run) for e in gm.audit_log(limit=10).entries}
    assert ("glossary", "curate:create-entity", report.run) in actions
    undone = gm.steward_undo(report.run)
    assert sorted(undone.undone) == sorted(report.audit_ids) and not undone.skipped
    assert entities(gm) == picture
    assert gm.store.entities.resolve_norms(["valkey", "postgres database"]) == {}


def test_one_change_of_it_is_undone_by_its_audit_id(gm: GraphMemory, graph: list[str]) -> None:
    write_glossary(gm, "PostgreSQL: [Postgres]\nRedis: [Valkey]\n")
    report = gm.apply_glossary()
    merge = report.merged[0].audit_id
    assert merge is not None
    gm.steward_undo(merge)
    assert {"postgres", "postgresql"} <= set(entities(gm))
    assert gm.store.entities.resolve_norms(["valkey"]) == {"valkey": "redis"}


def test_an_alias_naming_another_canonical_names_entity_is_left_for_a_person(
    gm: GraphMemory, graph: list[str]
) -> None:
    gm.add_entity_alias("redis", "Cache")
    write_glossary(gm, "Redis: [KeyDB]\nPostgreSQL: [Cache]\n")
    report = gm.apply_glossary()
    assert [(s.name, s.entity_id) for s in report.skipped] == [("Cache", "postgresql")]
    assert "the glossary's 'Redis'" in report.skipped[0].why
    assert {"redis", "postgresql"} <= set(entities(gm))


# -- indexing applies it ---------------------------------------------------------------------------


def test_indexing_applies_the_glossary_when_it_changed(gm: GraphMemory, graph: list[str]) -> None:
    write_glossary(gm, "Redis: [Valkey]\n")
    assert "redis" in named_in(gm, "The cache runs on Valkey.")  # applied before the batch
    audited = len(gm.audit_log(limit=100).entries)
    assert "redis" in named_in(gm, "The queue runs on Valkey.")
    assert len(gm.audit_log(limit=100).entries) == audited  # unchanged: not applied again
    write_glossary(gm, "Redis: [Valkey]\nPostgreSQL: [Postgres]\n")
    assert "postgresql" in named_in(gm, "Postgres needs a vacuum.")
    assert "postgres" not in entities(gm)


def test_a_bad_glossary_is_logged_and_indexing_goes_on(
    gm: GraphMemory, graph: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    path = write_glossary(gm, "- Redis\n- Valkey\n")
    with caplog.at_level(logging.WARNING, logger="graphmem.graph"):
        assert "valkey" in named_in(gm, "The cache runs on Valkey.")
        named_in(gm, "The queue runs on Valkey.")
    warned = [r.getMessage() for r in caplog.records if "glossary" in r.getMessage()]
    assert len(warned) == 1 and f"{path}:1:" in warned[0]  # once, not at every batch
    with pytest.raises(InvalidInput, match="a glossary is a mapping"):
        gm.apply_glossary()


def test_background_extraction_applies_the_file_the_setting_names(tmp_path: Path) -> None:
    (tmp_path / "names.yaml").write_text("Redis: [Valkey]\n", encoding="utf-8")
    overrides = {"extract_on_write": True, "glossary": "names.yaml"}
    settings = load_settings(tmp_path / ".graphmem", environ={}, overrides=overrides)
    with GraphMemory(settings, embedder=HashEmbedder()) as gm:
        first = gm.remember("The checkout-service depends on Redis for carts.")
        later = gm.remember("The cache runs on Valkey.")
        assert gm.wait_for_extraction(timeout=60)
        named = gm.store.entities.mentions_of([first.id, later.id])
        assert {(m, e) for m, e, _ in named} >= {(first.id, "redis"), (later.id, "redis")}
        assert gm.audit_log(limit=5).entries[0].actor == "glossary"


# -- one glossary per project ----------------------------------------------------------------------


def test_each_project_resolves_names_by_its_own_glossary(tmp_path: Path, new_store: Path) -> None:
    """Mercury is the planet in one project and the singer in the other: each store applies its
    own project's file, and the same text links to a different entity in each."""
    glossaries = {
        "astronomy": "Planet Mercury: [Mercury, the swift planet]\n",
        "music": "Freddie Mercury: [Mercury, Farrokh Bulsara]\n",
    }
    linked = {}
    for project, text in glossaries.items():
        root = tmp_path / project
        shutil.copytree(new_store, root / ".graphmem")
        (root / GLOSSARY_FILE).write_text(text, encoding="utf-8")
        with open_store(root / ".graphmem", embedder=HashEmbedder()) as gm:
            memory = gm.remember("Mercury deploys the billing-worker.")
            gm.index_triples()
            linked[project] = {e for _, e, _ in gm.store.entities.mentions_of([memory.id])}
    assert "planet mercury" in linked["astronomy"] and "freddie mercury" not in linked["astronomy"]
    assert "freddie mercury" in linked["music"] and "planet mercury" not in linked["music"]
