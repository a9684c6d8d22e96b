"""The garbage collector and the big indexes a store keeps in process.

A full collection walks every object the collector tracks. The entity index, the memory
columns and the keyword postings of a 100k store are millions of them, and the collections that
a multi-hop walk's thousands of new tuples set off took 100-150 ms each: the slowest 5% of
multi-hop recalls on LoCoMo dev spent more in them than in the walk. Those indexes hold no
reference cycles (reference counting frees them when they are replaced), so once one is built,
everything alive is moved to the permanent generation, which collections do not walk.
"""

from __future__ import annotations

import gc
from typing import TypeVar

_T = TypeVar("_T")


def settled(built: _T) -> _T:
    """Return `built`, a big index just made, with everything alive left out of collections."""
    gc.freeze()
    return built
