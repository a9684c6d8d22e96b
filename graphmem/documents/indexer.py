"""Incremental indexing: which files to read, which changed (their sha256 decides), which were
renamed or deleted, and each changed file parsed, redacted, chunked, embedded and written in one
transaction.

Paths: a file under the project root is known by its path relative to the root (the same key a
memory's citation uses); a file under a root outside the project by its absolute path, and shown
relative to that root.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import pathspec

from graphmem.documents.adr import supersessions
from graphmem.documents.chunks import chunk_section, embedding_text
from graphmem.documents.classify import is_noise_section, source_type
from graphmem.documents.ignore import is_binary, walk_files
from graphmem.documents.models import DocsIndexReport, SkippedFile
from graphmem.documents.parse import ParsedDocument, ParsedSection, parse_document
from graphmem.documents.redact import redact
from graphmem.embeddings.base import Embedder
from graphmem.errors import InvalidInput
from graphmem.ids import new_id
from graphmem.indexes.doc_index import ChunkInfo, DocInfo, SectionInfo
from graphmem.settings import Settings
from graphmem.storage.protocols import DocumentWrite, IndexedDocument, Store
from graphmem.text import index_text

Progress = Callable[[int, int], None]
EMBED_BATCH = 2048  # chunks embedded per call: sorted by length, they pad little
CHUNK_CHARS = 1000  # about the 256 word pieces the local model reads; longer text is cut off
TEXT_SUFFIXES = frozenset({".md", ".mdx", ".markdown", ".rst", ".txt"})
CONFIG_SUFFIXES = frozenset({".yml", ".yaml", ".tf", ".tfvars", ".toml"})
CONFIG_NAMES = frozenset({"Dockerfile", "Jenkinsfile", "Makefile"})


def indexable(path: Path) -> bool:
    return path.suffix.lower() in TEXT_SUFFIXES | CONFIG_SUFFIXES or path.name in CONFIG_NAMES


@dataclass(frozen=True)
class Found:
    """A file to index: where it is, its key in the store, and what hits show."""

    file: Path
    path: str
    root: str
    rel: str


@dataclass(frozen=True)
class Scope:
    """The indexed documents a run answers for: those of `root` whose `rel` starts with
    `prefix`, or just `only` (one named file). Documents of the scope that the run did not find
    are gone."""

    root: str
    prefix: str = ""
    only: str | None = None

    def covers(self, doc: IndexedDocument) -> bool:
        if self.only is not None:
            return doc.path == self.only
        return doc.rel.startswith(self.prefix)


def find_files(
    settings: Settings, paths: Sequence[str | Path] | None
) -> list[tuple[Scope, list[Found]]]:
    """The files of each root to index: the settings' globs over the project by default."""
    project = settings.home.parent.resolve()
    exclude = list(settings.docs_exclude)
    if not paths:
        wanted = pathspec.GitIgnoreSpec.from_lines(settings.docs_include)
        files = [
            f
            for f in walk_files(project, exclude=exclude)
            if indexable(f) and wanted.match_file(f.relative_to(project).as_posix())
        ]
        return [(Scope(""), [_in_project(f, project) for f in files])]
    out = []
    for given in paths:
        target = Path(given).expanduser()
        target = (target if target.is_absolute() else project / target).resolve()
        if not target.exists():
            raise InvalidInput(f"{given} does not exist", path=str(given))
        inside = target == project or project in target.parents
        if target.is_file():
            found = _in_project(target, project) if inside else _outside(target, target.parent)
            out.append((Scope(found.root, only=found.path), [found]))
            continue
        files = [f for f in walk_files(target, exclude=exclude) if indexable(f)]
        if inside:
            prefix = target.relative_to(project).as_posix()
            scope = Scope("", prefix="" if prefix == "." else prefix + "/")
            out.append((scope, [_in_project(f, project) for f in files]))
        else:
            out.append((Scope(target.as_posix()), [_outside(f, target) for f in files]))
    return out


def _in_project(file: Path, project: Path) -> Found:
    rel = file.relative_to(project).as_posix()
    return Found(file, rel, "", rel)


def _outside(file: Path, root: Path) -> Found:
    return Found(file, file.as_posix(), root.as_posix(), file.relative_to(root).as_posix())


@dataclass(frozen=True)
class _Pending:
    """A changed file, parsed and chunked, waiting for its new chunks' vectors."""

    found: Found
    write: DocumentWrite
    todo: list[tuple[str, str]]  # (chunk id, the text to embed) of the chunks without a vector
    updated: bool
    supersedes: list[tuple[str, str]] | None  # an ADR's (newer, older) document paths


class DocumentIndexer:
    """One indexing run over the store, with the embedder for new chunks."""

    def __init__(self, store: Store, embedder: Embedder, settings: Settings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.report = DocsIndexReport()
        self._rels: dict[str, str] = {}  # rel -> path of the documents of the root at hand

    def run(
        self, paths: Sequence[str | Path] | None = None, on_progress: Progress | None = None
    ) -> DocsIndexReport:
        started = time.perf_counter()
        plan = find_files(self.settings, paths)
        total = sum(len(files) for _, files in plan)
        done = 0
        for scope, files in plan:
            known = {
                p: d
                for p, d in self.store.documents.indexed_documents(scope.root).items()
                if scope.covers(d)
            }
            changed = []
            for found in files:
                state = self._read(found, known.get(found.path))
                if state is not None:
                    changed.append((found, *state))
                else:
                    done += 1
                    if on_progress:
                        on_progress(done, total)
            seen = {f.path for f in files}
            vanished = {
                p: d for p, d in known.items() if p not in seen and not self._exists(scope, d)
            }
            pending: list[_Pending] = []
            self._rels = {f.rel: f.path for f in files} | {d.rel: p for p, d in known.items()}
            stated: list[tuple[str, list[tuple[str, str]]]] = []
            for found, data, sha in changed:
                moved_from = _renamed(vanished, sha) if found.path not in known else None
                if moved_from is not None:
                    self._move(vanished.pop(moved_from), found)
                else:
                    pending.append(self._prepare(found, data, sha, known.get(found.path)))
                    if pending[-1].supersedes is not None:
                        stated.append((found.path, pending[-1].supersedes))
                    if sum(len(p.todo) for p in pending) >= EMBED_BATCH:
                        self._flush(pending)
                done += 1
                if on_progress:
                    on_progress(done, total)
            self._flush(pending)
            for path, pairs in stated:  # once every document they name is written
                self.store.documents.state_supersessions(path, pairs)
            if vanished:
                self.store.documents.remove(sorted(vanished), [self.embedder.space])
                self.report.removed += sorted(d.rel for d in vanished.values())
        self.report.seconds = round(time.perf_counter() - started, 3)
        return self.report

    def _exists(self, scope: Scope, doc: IndexedDocument) -> bool:
        """Whether a document's file is still there: one the run did not find (no longer under
        the globs, say) stays indexed until its file is deleted."""
        return (Path(doc.path) if scope.root else self.settings.home.parent / doc.path).is_file()

    def _read(self, found: Found, indexed: IndexedDocument | None) -> tuple[bytes, str] | None:
        """The file's bytes and sha256 when it needs indexing; None when it is unchanged or
        cannot be indexed (then reported as skipped)."""
        try:
            size = found.file.stat().st_size
            limit = self.settings.docs_max_file_bytes
            why = f"larger than {limit} bytes" if size > limit else None
            why = why or ("binary" if is_binary(found.file) else None)
            data = b"" if why else found.file.read_bytes()
        except OSError as exc:
            why = f"unreadable: {exc.strerror or exc}"
        if why:
            self.report.skipped.append(SkippedFile(path=found.rel, why=why))
            return None
        sha = hashlib.sha256(data).hexdigest()
        if indexed is not None and indexed.sha256 == sha:
            self.report.unchanged += 1
            return None
        return data, sha

    def _move(self, old: IndexedDocument, found: Found) -> None:
        index = self.store.documents.index()
        before = index.docs.get(old.uid)
        title, kind = (before.title, before.source_type) if before else (found.rel, "docs")
        doc = DocInfo(old.uid, found.path, found.root, found.rel, title, kind)
        self.store.documents.move(old.path, doc)
        self.report.moved.append({"from": old.rel, "to": found.rel})

    def _prepare(
        self, found: Found, data: bytes, sha: str, before: IndexedDocument | None
    ) -> _Pending:
        """Parse, redact and chunk a changed file; its new chunks wait to be embedded."""
        text, secrets = redact(data.decode("utf-8", errors="replace"))
        parsed = parse_document(found.rel, text)
        kind = source_type(found.rel, parsed.metadata, text)
        uid = before.uid if before is not None else new_id()
        doc = DocInfo(uid, found.path, found.root, found.rel, parsed.title, kind)
        sections, parents, chunks, texts = self._structure(doc, parsed)
        have = self.store.documents.chunk_vector_ids(self.embedder.space, [c.id for c in chunks])
        by_key = {s.key: s for s in sections}
        write = DocumentWrite(
            doc=doc,
            sha256=sha,
            size=len(data),
            mtime=datetime.fromtimestamp(found.file.stat().st_mtime, UTC),
            metadata=parsed.metadata,
            sections=sections,
            parents=parents,
            chunks=chunks,
            search_texts=[_search_text(doc, by_key[c.section], c) for c in chunks],
            new_vectors={},
        )
        todo = [(c.id, t) for c, t in zip(chunks, texts, strict=True) if c.id not in have]
        self.report.redacted += secrets
        self.report.warnings += [f"{found.rel}: {w}" for w in parsed.warnings]
        stated = None
        if kind == "adr":
            pairs = supersessions(found.rel, text, self._rels)
            stated = [(self._rels[newer], self._rels[older]) for newer, older in pairs]
        return _Pending(found, write, todo, updated=before is not None, supersedes=stated)

    def _flush(self, pending: list[_Pending]) -> None:
        """Embed the new chunks of the pending files in one call (the embedder splits a big
        call between the cores), then write the files in one transaction."""
        texts = [t for p in pending for _, t in p.todo]
        vectors = iter(self.embedder.embed(texts)) if texts else iter(())
        writes = [
            replace(p.write, new_vectors={chunk_id: next(vectors) for chunk_id, _ in p.todo})
            for p in pending
        ]
        self.store.documents.write(writes, self.embedder.space)
        for item in pending:
            (self.report.updated if item.updated else self.report.added).append(item.found.rel)
            self.report.sections += len(item.write.sections)
            self.report.chunks += len(item.write.chunks)
            self.report.embedded += len(item.todo)
        pending.clear()

    def _structure(
        self, doc: DocInfo, parsed: ParsedDocument
    ) -> tuple[list[SectionInfo], dict[str, str], list[ChunkInfo], list[str]]:
        """Sections (noise left out with what lies under it), their parents, and their chunks
        in reading order with the text each is embedded as."""
        noise: set[str] = set()
        sections: list[SectionInfo] = []
        parents: dict[str, str] = {}
        chunks: list[ChunkInfo] = []
        texts: list[str] = []
        ids: dict[str, int] = {}
        for section in parsed.sections:
            if section.parent_key in noise or (
                section.level > 1  # a document's own title is never noise ("Changelog")
                and doc.source_type != "changelog"
                and not self.settings.docs_index_noise
                and is_noise_section(section.title)
            ):
                noise.add(section.key)
                continue
            info = _section_info(doc, section, len(sections))
            sections.append(info)
            if section.parent_key is not None:
                parents[info.key] = f"{doc.uid}#{section.parent_key}"
            for piece in chunk_section(section, max_chars=CHUNK_CHARS):
                embedded = embedding_text(section.breadcrumb, piece.text)
                digest = hashlib.sha256(embedded.encode()).hexdigest()[:16]
                seen = ids.get(digest, 0)
                ids[digest] = seen + 1
                chunk_id = f"{doc.uid}:{digest}" + (f"-{seen}" if seen else "")
                chunks.append(
                    ChunkInfo(
                        chunk_id,
                        doc.uid,
                        info.key,
                        len(chunks),
                        piece.text,
                        piece.start_line,
                        piece.end_line,
                    )
                )
                texts.append(embedded)
        return sections, parents, chunks, texts


def _section_info(doc: DocInfo, section: ParsedSection, ord_: int) -> SectionInfo:
    return SectionInfo(
        key=f"{doc.uid}#{section.key}",
        doc=doc.uid,
        section_key=section.key,
        title=section.title,
        level=section.level,
        breadcrumb=tuple(section.breadcrumb),
        ord=ord_,
        start_line=section.start_line,
        end_line=section.end_line,
    )


def _search_text(doc: DocInfo, section: SectionInfo, chunk: ChunkInfo) -> str:
    """What BM25 reads of a chunk: its text and its path, and the headings above it as its
    title (counted twice)."""
    headings = " ".join(section.breadcrumb[1:]) or doc.title
    path_words = " ".join(PurePosixPath(doc.rel).with_suffix("").parts)
    return index_text(f"{chunk.text} {path_words}", title=headings)


def _renamed(vanished: dict[str, IndexedDocument], sha: str) -> str | None:
    """The path of a document that is gone and had exactly this content: the file moved."""
    return next((p for p, d in vanished.items() if d.sha256 == sha), None)
