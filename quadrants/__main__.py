"""``python -m quadrants cache [info|clear] [--path DIR]``: show or clear the offline cache."""

import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "cache":
        print("usage: python -m quadrants cache [info|clear] [--path DIR]", file=sys.stderr)
        return 2
    from quadrants import _cache

    return _cache.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
