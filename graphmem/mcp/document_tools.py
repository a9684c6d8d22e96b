"""MCP tools for project documents (index them, search them by section, read a whole section) and
for the project's files (list, read, search), confined to the allowed roots.

Same rules as the memory tools: each calls exactly one MemoryAPI method and returns its pydantic
model (search hits shown compact unless `detail="full"`); arguments are strict; graphmem errors
become tool errors in `tooling.guard`."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated

from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import Field

from graphmem.documents.models import (
    DocSearchResult,
    DocsIndexReport,
    RepoFile,
    RepoListing,
    RepoMatches,
    SectionText,
)
from graphmem.mcp.args import DetailArg
from graphmem.mcp.present import shown
from graphmem.mcp.tooling import hints, make_tool

if TYPE_CHECKING:
    from graphmem.api import MemoryAPI as GraphMemory

__all__ = ["document_tools"]

INDEX = """\
Index the project's documents (ADRs, runbooks, postmortems, READMEs, docs/, CI configs) so \
semantic_search can find them. Only files whose content changed since the last run are read and \
embedded again; renamed files are moved, deleted ones removed. Without `paths` it indexes the \
project's configured documents; with `paths` (files or folders, relative to the project root) \
only those. Secrets are redacted before anything is stored. Returns what was added, updated, \
moved, removed, unchanged and skipped (and why)."""

SEARCH = """\
Search the project's indexed documents by meaning and by exact words. Use it to find how \
something is done here (runbooks), why it was decided (ADRs), what happened (postmortems) or \
how something is configured. Returns `hits`, best first, one per section: each has `path`, \
`section_key`, `section` (document title > headings), `source_type`, `lines` and a `snippet` \
(`detail=full`: the full records); read the whole section with expand_section(path, \
section_key). `source_type` (adr, \
runbook, postmortem, readme, docs, changelog, ci_config, k8s, helm, terraform, ...) and \
`path_prefix` narrow the search.

Example: {"query": "how do I roll back a bad deploy", "limit": 5}"""

EXPAND = """\
Return one whole section of an indexed document, in reading order, with the sections under it \
(their keys, to expand next). Give `path` and `section_key` as semantic_search returned them; \
the key "" is the document's text before its first heading."""

REPO_LIST = """\
List a folder of the project (its files and sub-folders, with sizes), leaving out what \
.gitignore ignores and vendored or build folders. Paths outside the project (or the configured \
repo_roots), `..` escapes and symlinks that lead outside are refused."""

REPO_READ = """\
Read lines of a text file of the project: `start_line`..`end_line` (1-based), at most \
`max_bytes`. Returns the text, the line range returned, the file's line count and its sha256. \
Binary files and paths outside the project are refused."""

REPO_SEARCH = """\
Find lines in the project's text files: a literal string (default) or a regular expression \
(`regex`), under `path`, in files matching `glob`. .gitignore is respected; binary and huge \
files are skipped. Returns each match's path, line number and text."""

Limit = Annotated[int, Field(description="How many results at most.")]
RepoPath = Annotated[str, Field(min_length=1, description="Relative to the project root.")]


def document_tools(gm: GraphMemory, lock: threading.Lock) -> list[Tool]:
    """The document tools over `gm`, sharing `lock` with the other tools of the server."""

    def index_documents(
        paths: Annotated[
            list[str] | None,
            Field(description="Files or folders to index, relative to the project root."),
        ] = None,
    ) -> DocsIndexReport:
        return gm.index_documents(paths or None)

    def semantic_search(
        query: Annotated[str, Field(min_length=1, description="What you are looking for.")],
        limit: Limit = 10,
        source_type: Annotated[
            str | None, Field(description="Only documents of this type, e.g. runbook, adr.")
        ] = None,
        path_prefix: Annotated[
            str | None, Field(description="Only documents under this path, e.g. docs/adr/.")
        ] = None,
        explain: Annotated[
            bool, Field(description="Include each hit's score components in `explain`.")
        ] = False,
        detail: DetailArg = "compact",
    ) -> Annotated[CallToolResult, DocSearchResult]:
        found = gm.search_docs(
            query, limit=limit, source_type=source_type, path_prefix=path_prefix, explain=explain
        )
        return shown(found, detail)

    def expand_section(
        path: Annotated[str, Field(min_length=1, description="The document's path, as found.")],
        section_key: Annotated[
            str, Field(description='The section\'s key, as found; "" for the top.')
        ] = "",
    ) -> SectionText:
        return gm.expand_section(path, section_key)

    def repo_list(
        path: RepoPath = ".",
        pattern: Annotated[str | None, Field(description="Only names matching this glob.")] = None,
        recursive: Annotated[bool, Field(description="Walk the whole tree under path.")] = False,
        limit: Limit = 200,
    ) -> RepoListing:
        return gm.repo_list(path, pattern=pattern, recursive=recursive, limit=limit)

    def repo_read(
        path: RepoPath,
        start_line: Annotated[int, Field(description="First line, 1-based.")] = 1,
        end_line: Annotated[int | None, Field(description="Last line (default: the end).")] = None,
        max_bytes: Annotated[int, Field(description="Stop after this many bytes.")] = 65536,
    ) -> RepoFile:
        return gm.repo_read(path, start_line=start_line, end_line=end_line, max_bytes=max_bytes)

    def repo_search(
        query: Annotated[str, Field(min_length=1, description="Text to find, or a regex.")],
        path: RepoPath = ".",
        regex: Annotated[bool, Field(description="query is a regular expression.")] = False,
        case_sensitive: Annotated[bool, Field(description="Match case exactly.")] = False,
        glob: Annotated[
            str | None, Field(description="Only files matching this glob, e.g. *.py.")
        ] = None,
        limit: Limit = 100,
    ) -> RepoMatches:
        return gm.repo_search(
            query, path=path, regex=regex, case_sensitive=case_sensitive, glob=glob, limit=limit
        )

    return [
        make_tool(lock, index_documents, INDEX, hints("Index project documents")),
        make_tool(lock, semantic_search, SEARCH, hints("Search project documents")),
        make_tool(lock, expand_section, EXPAND, hints("Read a whole section")),
        make_tool(lock, repo_list, REPO_LIST, hints("List project files")),
        make_tool(lock, repo_read, REPO_READ, hints("Read a project file")),
        make_tool(lock, repo_search, REPO_SEARCH, hints("Search project files")),
    ]
