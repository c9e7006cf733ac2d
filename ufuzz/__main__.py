"""``python -m ufuzz``: the command line, for checkouts where the ``ufuzz`` script is not on PATH."""

from ufuzz.cli import main

if __name__ == "__main__":
    main()
