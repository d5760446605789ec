"""Allow ``python -m cloudsched``."""

from cloudsched.cli import main

if __name__ == "__main__":
    main()
