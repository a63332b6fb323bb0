"""Operations across shards: durable sagas with compensations, exactly-once
steps on the owning shard, and a transactional outbox (docs/saga.md).

>>> from shardhash.saga import Saga
>>> transfer = Saga("doc-transfer")
>>> @transfer.step(key=lambda a: a["from"])
... def debit(ctx, a):
...     return a["amount"]
>>> [s.name for s in transfer.steps]
['debit']
"""

from __future__ import annotations

from ._tables import DEFAULT_TABLES, KEY_COLUMN, Tables
from .core import (
    FINAL,
    STATES,
    LeaseLost,
    NoCompensation,
    Pending,
    Saga,
    SagaMetrics,
    Step,
    StepContext,
    StepFailed,
    abort,
    counts,
    list_sagas,
    metrics,
    pending,
    records,
    registry,
    resume,
    set_fault_hook,
    setup,
    status,
)
from .outbox import Event, Relay

__all__ = [
    "DEFAULT_TABLES",
    "FINAL",
    "KEY_COLUMN",
    "STATES",
    "Event",
    "LeaseLost",
    "NoCompensation",
    "Pending",
    "Relay",
    "Saga",
    "SagaMetrics",
    "Step",
    "StepContext",
    "StepFailed",
    "Tables",
    "abort",
    "counts",
    "list_sagas",
    "metrics",
    "pending",
    "records",
    "registry",
    "resume",
    "set_fault_hook",
    "setup",
    "status",
]
