"""``python -m git_hydrate``: the same as the ``git-hydrate`` command."""

from .cli import main

if __name__ == "__main__":
    main()
