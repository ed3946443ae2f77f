"""``python -m ldp``: the ``ldp`` command."""

from ldp.cli import main

if __name__ == "__main__":
    main()
