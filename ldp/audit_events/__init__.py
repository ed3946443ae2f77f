"""Audit events of every mechanism family (``ldp audit``).

One module per family: an :class:`~ldp.audit_events.base.AuditFamily`
subclass, named as the ``audit_events`` of each mechanism it serves in that
mechanism's declaration (:mod:`ldp.registry`), and imported only when a
spec of that mechanism is audited (docs/adding-a-mechanism.md).
"""

from ldp.audit_events.base import AuditFamily, Claim, Event, Features

__all__ = ["AuditFamily", "Claim", "Event", "Features"]
