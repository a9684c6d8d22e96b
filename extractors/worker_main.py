"""The child side of `worker_pool`: `serve(model, batch_size)` in a fresh interpreter.

It reads pickled lists of texts from stdin and writes pickled lists of Extractions to stdout,
one reply per request, until stdin closes. The first reply is the extractor's name, sent
once the model is loaded, so the parent knows the worker is ready and runs the same model.
"""

from __future__ import annotations

import pickle
import sys

from .spacy_extractor import SpacyExtractor


def serve(model: str, batch_size: int) -> None:
    channel_in, channel_out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the reply stream
    extractor = SpacyExtractor(model, batch_size=batch_size, workers=1)
    extractor.extract(["warm up"])
    pickle.dump(extractor.name, channel_out)
    channel_out.flush()
    while True:
        try:
            texts = pickle.load(channel_in)
        except EOFError:
            return
        pickle.dump(extractor.extract(texts), channel_out, protocol=pickle.HIGHEST_PROTOCOL)
        channel_out.flush()
