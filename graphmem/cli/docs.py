"""Project documents: index them, search them, read a whole section. Each command parses, calls
one MemoryAPI method and renders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from graphmem.cli.common import HomeOpt, JsonOpt, emit_json, escape, opened, out, progress_bar

app = typer.Typer()


@app.command()
def index(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files or folders to index; a folder outside the project is its own root. "
            "Default: the project's documents (settings docs_include / docs_exclude)."
        ),
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index project documents; only files whose content changed are read again."""
    given = [p.expanduser().resolve() for p in paths] if paths else None
    with opened(home, as_json, embeds=True, writes=True) as gm:
        with progress_bar() as bar:
            task = bar.add_task("indexing", total=None)
            report = gm.index_documents(
                given, on_progress=lambda done, total: bar.update(task, completed=done, total=total)
            )
        if as_json:
            return emit_json(report)
        moved = len(report.moved)
        out.print(
            f"{len(report.added)} added, {len(report.updated)} updated, {moved} moved, "
            f"{len(report.removed)} removed, {report.unchanged} unchanged, "
            f"{len(report.skipped)} skipped in {report.seconds:.1f}s "
            f"({report.sections} sections, {report.chunks} chunks, {report.embedded} embedded)",
            markup=False,
        )
        if report.redacted:
            out.print(f"{report.redacted} secrets redacted before indexing", markup=False)
        for skipped in report.skipped:
            out.print(f"  skipped {skipped.path}: {skipped.why}", markup=False)
        for warning in report.warnings:
            out.print(f"  [yellow]warning[/yellow] {escape(warning)}")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What you are looking for, in words.")],
    limit: Annotated[int, typer.Option("--limit", "-n")] = 10,
    source_type: Annotated[
        str | None,
        typer.Option("--type", "-t", help="Only documents of this source type, e.g. runbook, adr."),
    ] = None,
    path_prefix: Annotated[
        str | None, typer.Option("--path", help="Only documents under this path.")
    ] = None,
    recipe: Annotated[str | None, typer.Option("--recipe", help="hybrid | bm25 | vector")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show every score component.")] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the indexed documents: one hit per section, best first."""
    with opened(home, as_json, embeds=True) as gm:
        result = gm.search_docs(
            query,
            limit=limit,
            source_type=source_type,
            path_prefix=path_prefix,
            explain=explain,
            recipe=recipe,
        )
        if as_json:
            return emit_json(result)
        for warning in result.warnings:
            out.print(f"[yellow]{escape(warning)}[/yellow]")
        if not result.hits:
            out.print("no matching sections (index documents with `graphmem index`)")
        for hit in result.hits:
            where = f"{hit.path}:{hit.lines[0]}-{hit.lines[1]}"
            out.print(f"[bold]{hit.score:.3f}[/bold]  {escape(where)}  [{hit.source_type}]")
            out.print(f"  {escape(' > '.join(hit.breadcrumb))}  (#{escape(hit.section_key)})")
            out.print(f"  {hit.snippet}", markup=False)
            if hit.explain:
                contributions = hit.explain["contributions"]
                parts = ", ".join(f"{k} {v:.3f}" for k, v in contributions.items() if v)
                out.print(f"  [dim]{escape(parts)}[/dim]")


@app.command()
def expand(
    path: Annotated[str, typer.Argument(help="The document's path, as search shows it.")],
    section_key: Annotated[
        str, typer.Argument(help="The section's key, as search shows it ('' for the top).")
    ] = "",
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a whole section of an indexed document, and the sections under it."""
    with opened(home, as_json) as gm:
        section = gm.expand_section(path, section_key)
        if as_json:
            return emit_json(section)
        out.print(f"[bold]{escape(' > '.join(section.breadcrumb))}[/bold]")
        out.print(f"{escape(section.path)}:{section.lines[0]}-{section.lines[1]}")
        out.print(section.text, markup=False)
        for sub in section.subsections:
            out.print(f"  -> {escape(sub.heading)}  (#{escape(sub.section_key)})")


repo_app = typer.Typer(no_args_is_help=True)


@repo_app.command("list")
def repo_list(
    path: Annotated[str, typer.Argument(help="A folder, relative to the project root.")] = ".",
    pattern: Annotated[
        str | None, typer.Option("--pattern", help="Only names matching this glob.")
    ] = None,
    recursive: Annotated[bool, typer.Option("--recursive", "-r", help="Walk the tree.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 200,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List a folder of the project (.gitignore and vendored folders left out)."""
    with opened(home, as_json) as gm:
        listing = gm.repo_list(path, pattern=pattern, recursive=recursive, limit=limit)
        if as_json:
            return emit_json(listing)
        for entry in listing.entries:
            size = f"{entry.size:>10}" if entry.size is not None else " " * 10
            out.print(f"{size}  {entry.path}{'/' if entry.kind == 'dir' else ''}", markup=False)
        if listing.truncated:
            out.print(f"(more than {limit} entries: raise --limit or narrow the path)")


@repo_app.command("read")
def repo_read(
    path: Annotated[str, typer.Argument(help="A file, relative to the project root.")],
    start: Annotated[int, typer.Option("--start", help="First line, 1-based.")] = 1,
    end: Annotated[int | None, typer.Option("--end", help="Last line.")] = None,
    max_bytes: Annotated[int, typer.Option("--max-bytes", help="Stop after this much.")] = 65536,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print lines of a text file of the project."""
    with opened(home, as_json) as gm:
        read = gm.repo_read(path, start_line=start, end_line=end, max_bytes=max_bytes)
        if as_json:
            return emit_json(read)
        out.print(read.text, markup=False, end="" if read.text.endswith("\n") else "\n")
        if read.truncated:
            out.print(f"(cut at {max_bytes} bytes, at line {read.end_line} of {read.total_lines})")


@repo_app.command("search")
def repo_search(
    query: Annotated[str, typer.Argument(help="Text to find (a regex with --regex).")],
    path: Annotated[str, typer.Option("--path", help="Only under this folder.")] = ".",
    regex: Annotated[bool, typer.Option("--regex", help="QUERY is a regular expression.")] = False,
    case_sensitive: Annotated[
        bool, typer.Option("--case-sensitive", help="Match case exactly.")
    ] = False,
    glob: Annotated[
        str | None, typer.Option("--glob", help="Only files matching this gitignore-style glob.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 100,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Find lines in the project's text files (.gitignore respected)."""
    with opened(home, as_json) as gm:
        found = gm.repo_search(
            query, path=path, regex=regex, case_sensitive=case_sensitive, glob=glob, limit=limit
        )
        if as_json:
            return emit_json(found)
        for match in found.matches:
            out.print(f"{match.path}:{match.line}: {match.text}", markup=False)
        if found.truncated:
            out.print(f"(more than {limit} matches: raise --limit or narrow the search)")
