"""`python -m evr1.rewards FILE [options]`: the same as `evr1 rewards score FILE [options]`."""

import sys

from evr1.cli import main

if __name__ == "__main__":
    sys.exit(main(["rewards", "score", *sys.argv[1:]]))
