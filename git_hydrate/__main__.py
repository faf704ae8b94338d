"""``python -m git_hydrate``: the same as the ``git-hydrate`` command."""

from .quick import main

if __name__ == "__main__":
    main()
