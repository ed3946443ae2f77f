"""``python -m ldp``: the ``ldp`` command."""

from ldp.cli import main

main()
