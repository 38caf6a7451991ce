"""Process settings of the real-time path: the heap settled out of the collector's passes."""

from __future__ import annotations

import gc

from motor_ident.core.threads import settle_heap


def test_settle_heap_collects_garbage_then_freezes_the_living() -> None:
    """A reference cycle dropped before is collected, not frozen; what lives is frozen, so a full
    pass afterwards walks only what was allocated since."""
    gc.unfreeze()

    class Cycle:
        pass

    def survivors() -> int:
        return sum(isinstance(o, Cycle) for o in gc.get_objects())

    garbage = Cycle()
    garbage.self = garbage  # type: ignore[attr-defined]
    del garbage
    alive = Cycle()
    try:
        settle_heap()
        assert gc.get_freeze_count() > 1000
        assert survivors() == 0  # gc.get_objects() leaves the frozen out: ``alive`` is frozen
        gc.collect()
        assert survivors() == 0
    finally:
        gc.unfreeze()
    assert survivors() == 1  # unfrozen: ``alive`` is tracked again, the cycle is gone
    del alive
