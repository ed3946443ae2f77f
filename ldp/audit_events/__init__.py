"""Audit events of every mechanism family, registered with :mod:`ldp.plugins` (role ``audit_events``).

One module per family; importing this package registers them all, so a new
mechanism adds a module (an :class:`~ldp.audit_events.base.AuditFamily`
registered for its spec class) and one import line here
(docs/adding-a-mechanism.md#tests-and-docs).
"""

from ldp.audit_events import bits as _bits  # noqa: F401 - SUE, OUE, SS
from ldp.audit_events import hashing as _hashing  # noqa: F401 - OLH, BLH, PEM, TreeHist
from ldp.audit_events import numeric as _numeric  # noqa: F401 - the numeric mechanisms
from ldp.audit_events import rappor as _rappor  # noqa: F401 - RAPPOR
from ldp.audit_events import sketch as _sketch  # noqa: F401 - CMS, HCMS
from ldp.audit_events import values as _values  # noqa: F401 - GRR, binary RR, HR
from ldp.audit_events.base import AuditFamily, Claim, Event, Features

__all__ = ["AuditFamily", "Claim", "Event", "Features"]
