"""``python -m ufuzz``: the command line, for checkouts where the ``ufuzz`` script is not on PATH."""

import os
import sys

try:
    from ufuzz.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line is still being imported: exit 130, one line
    sys.stderr.write("interrupted\n")
    sys.stderr.flush()
    os._exit(130)

if __name__ == "__main__":
    main()
