"""``python -m shardhash``: the same as the ``shardhash`` command."""

import sys

from shardhash.cli import main

if __name__ == "__main__":
    sys.exit(main())
