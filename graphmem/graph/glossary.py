"""The project's glossary: `graphmem.aliases.yaml`, a mapping from each thing's canonical name to
the other names text uses for it, kept in the repository so the names travel with the code.

    # names of things in this project, and the other names text uses for them
    New York City: [NYC, New York, the Big Apple]
    Logit.io:
      - logit

This module only reads the file; graph/glossary_ops.py applies it to the entity graph. Names are
compared as resolution compares them (their normalised form), so "NYC" and "nyc" are one name,
and a name may belong to one entry only: the file says plainly which thing each name is.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from graphmem.errors import InvalidInput
from graphmem.extractors.normalise import normalise
from graphmem.storage.protocols import compact_key

GLOSSARY_FILE = "graphmem.aliases.yaml"
_STRING = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"


class GlossaryEntry(BaseModel):
    """One thing: its canonical name and the aliases that name it too."""

    model_config = ConfigDict(frozen=True)

    name: str
    norm: str
    aliases: tuple[str, ...]
    line: int  # where the file names it, from 1


class Glossary(BaseModel):
    """A glossary file as read: its entries, and the hash that says whether it changed."""

    model_config = ConfigDict(frozen=True)

    path: Path
    sha256: str
    entries: tuple[GlossaryEntry, ...]


def glossary_path(setting: Path | None, project_root: Path) -> Path:
    """The file the `glossary` setting names (relative to the project root), or the project
    root's graphmem.aliases.yaml."""
    chosen = Path(setting).expanduser() if setting else Path(GLOSSARY_FILE)
    return chosen if chosen.is_absolute() else project_root / chosen


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_glossary(path: Path) -> Glossary | None:
    """The glossary at `path`; None when there is no such file (a project without one)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read the glossary: {exc}", path=str(path)) from exc
    return parse_glossary(text, path)


def parse_glossary(text: str, path: Path) -> Glossary:
    """Entries from the YAML text; InvalidInput naming the file and the line of the first
    thing wrong."""
    return Glossary(path=path, sha256=content_hash(text), entries=_Reader(path).entries(text))


class _Reader:
    """Reads one file's nodes, refusing what is wrong with the file and line it is on."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def refuse(self, node_or_line: yaml.Node | int, message: str) -> InvalidInput:
        line = node_or_line if isinstance(node_or_line, int) else node_or_line.start_mark.line + 1
        return InvalidInput(f"{self.path}:{line}: {message}", path=str(self.path), line=line)

    def entries(self, text: str) -> tuple[GlossaryEntry, ...]:
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else 1
            problem = getattr(exc, "problem", None) or exc
            raise self.refuse(line, f"not valid YAML: {problem}") from exc
        if root is None or (isinstance(root, yaml.ScalarNode) and root.tag == _NULL):
            return ()  # an empty file, or one of comments only
        if not isinstance(root, yaml.MappingNode):
            raise self.refuse(
                root,
                "a glossary is a mapping of canonical names to lists of aliases "
                "(`New York City: [NYC, the Big Apple]`)",
            )
        entries: list[GlossaryEntry] = []
        owners: dict[str, tuple[str, int]] = {}  # a name's norm -> (its entry's name, line)
        for key, value in root.value:
            name = self.string(key, "a canonical name")
            line = key.start_mark.line + 1
            norm = self.norm(key, name, "a canonical name")
            if norm in owners:
                first, at = owners[norm]
                raise self.refuse(
                    key, f"{name!r} is listed twice (first on line {at})" if first == name else
                    f"{name!r} is already a name of {first!r} (line {at}): a name can belong "
                    "to one entry only",
                )  # fmt: skip
            owners[norm] = (name, line)
            aliases: list[str] = []
            for node in self.items(value):
                alias = self.string(node, f"an alias of {name!r}")
                said = self.norm(node, alias, f"an alias of {name!r}")
                owner = owners.setdefault(said, (name, node.start_mark.line + 1))
                if owner[0] != name:
                    raise self.refuse(
                        node, f"{alias!r} (an alias of {name!r}) is already a name of "
                        f"{owner[0]!r} (line {owner[1]}): a name can belong to one entry only",
                    )  # fmt: skip
                aliases.append(alias)
            entries.append(GlossaryEntry(name=name, norm=norm, aliases=tuple(aliases), line=line))
        return tuple(entries)

    def items(self, value: yaml.Node) -> list[yaml.Node]:
        """The alias nodes of an entry: a list, one string, or none (`Name:` alone)."""
        if isinstance(value, yaml.SequenceNode):
            return list(value.value)
        if isinstance(value, yaml.ScalarNode) and value.tag == _NULL:
            return []
        return [value]

    def string(self, node: yaml.Node, what: str) -> str:
        if isinstance(node, yaml.ScalarNode) and node.tag == _STRING:
            return str(node.value).strip()
        if isinstance(node, yaml.ScalarNode) and node.tag != _NULL:
            raise self.refuse(node, f"{what} must be a string, not {node.value!r}: quote it")
        raise self.refuse(node, f"{what} must be a string")

    def norm(self, node: yaml.Node, name: str, what: str) -> str:
        """The name as resolution compares names; a name of no letters or digits is empty."""
        norm: str = normalise(name)
        if not compact_key(norm):
            raise self.refuse(node, f"{what} is empty: {name!r} has no letters or digits")
        return norm
