"""What document indexing, search and section expansion return, at every boundary."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from graphmem.models import DocHit, Lifecycle, Model, UtcDateTime


class SkippedFile(Model):
    path: str
    why: str = Field(description="binary, too large, unreadable, ...")


class DocsIndexReport(Model):
    """What an indexing run did, file by file."""

    added: list[str] = Field(default_factory=list)
    updated: list[str] = Field(default_factory=list)
    moved: list[dict[str, str]] = Field(
        default_factory=list, description="renamed files: {from, to}; nothing embedded again"
    )
    removed: list[str] = Field(default_factory=list)
    unchanged: int = 0
    skipped: list[SkippedFile] = Field(default_factory=list)
    sections: int = Field(default=0, description="sections written by this run")
    chunks: int = Field(default=0, description="chunks written by this run")
    embedded: int = Field(default=0, description="chunks embedded (the others kept their vectors)")
    redacted: int = Field(default=0, description="secrets replaced by [REDACTED]")
    warnings: list[str] = Field(default_factory=list)
    seconds: float = 0.0


class DocSearchResult(Model):
    query: str
    hits: list[DocHit] = Field(default_factory=list)
    degraded: bool = Field(
        default=False,
        description="keyword-only: the documents were embedded with another model than the query",
    )
    embedding_space: str | None = None
    warnings: list[str] = Field(default_factory=list)

    def __len__(self) -> int:
        return len(self.hits)


class SubSection(Model):
    section_key: str
    heading: str


class SectionText(Model):
    """A whole section, in reading order."""

    path: str
    title: str
    section_key: str
    heading: str
    breadcrumb: list[str]
    source_type: str
    lines: list[int]
    text: str
    subsections: list[SubSection] = Field(
        default_factory=list, description="sections under it, to expand next"
    )


# -- what the store holds of its documents (the console's pages) -------------------------------


class DocumentSummary(Model):
    path: str
    title: str | None = None
    source_type: str | None = None
    sections: int = Field(description="its sections; 0 for a file cited but not indexed")


class DocumentsOverview(Model):
    """Every document the store knows, indexed or only cited by a memory, by path."""

    documents: list[DocumentSummary]


class DocumentSection(Model):
    section_key: str
    title: str | None = None
    level: int
    start_line: int | None = None
    end_line: int | None = None


class DocumentCitation(Model):
    """A memory that cites the document, and the section it named."""

    memory_id: str
    title: str | None = None
    content: str
    lifecycle: Lifecycle
    section: str | None = None


class DocumentPage(Model):
    """One document: its sections in reading order and the memories citing it, oldest first."""

    path: str
    title: str | None = None
    source_type: str | None = None
    indexed_at: UtcDateTime | None = None
    sections: list[DocumentSection] = Field(default_factory=list)
    cited_by: list[DocumentCitation] = Field(default_factory=list)


# -- the file tools (graphmem.documents.repo) ------------------------------------------------


class RepoEntry(Model):
    path: str = Field(
        description="POSIX path relative to the project root (absolute under another root)"
    )
    kind: Literal["file", "dir"] = Field(description="what it is, or what a symlink points to")
    size: int | None = Field(default=None, description="bytes, for files")


class RepoListing(Model):
    path: str = Field(description="the directory listed")
    entries: list[RepoEntry]
    truncated: bool = Field(description="more entries matched than the limit")


class RepoFile(Model):
    path: str
    start_line: int = Field(description="first line returned, 1-based")
    end_line: int = Field(description="last line returned; start_line - 1 when none was")
    total_lines: int = Field(description="lines in the whole file")
    text: str
    truncated: bool = Field(description="stopped at max_bytes before end_line")
    sha256: str = Field(description="hex SHA-256 of the whole file, to detect changes")


class RepoMatch(Model):
    path: str
    line: int = Field(description="1-based line number")
    text: str = Field(description="the line, cut to 300 characters around the match")


class RepoMatches(Model):
    query: str
    matches: list[RepoMatch]
    truncated: bool = Field(description="more matches than the limit")
    files_searched: int = Field(description="text files read")
