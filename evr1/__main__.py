"""`python -m evr1` is the `evr1` command."""

from evr1.cli import entry

entry()
