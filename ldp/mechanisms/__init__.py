"""Declarations of built-in mechanism families, one module each.

Every module of this package (``ldp/mechanisms/NAME.py``; names starting
with ``_`` are skipped) holds a ``DECLARATIONS`` tuple of
:class:`~ldp.registry.MechanismDeclaration` and nothing heavier: the
registry imports them all when it is first imported, and each declaration
names its spec and layer implementations by module path, loaded only when
used. Adding a built-in family is adding a module here (and its own
implementation modules); no list elsewhere is edited.
"""
