"""Reads a Memcheck log written with --leak-check=full and fails on leaks of our extension.

    python scripts/valgrind_leaks.py build/valgrind/soak.log

A "definitely lost" record counts as ours when a frame of its allocation stack lies in the
extension (quadrants/_core*.so) or in generated code (a frame without an object, "???").
CPython and NumPy leave a few blocks unreachable at exit by design; those are listed as a count
only. Prints every record of ours with its stack and exits 1 if there is any, 2 if the log holds
no leak summary (the run died before exit).
"""

import re
import sys

RECORD = re.compile(r"([\d,]+) (?:\(([\d,]+) direct, [\d,]+ indirect\) )?bytes in [\d,]+ blocks "
                    r"are definitely lost")


def records(lines):
    """Yields (direct_bytes, lines_of_record) for each definitely-lost record in the log."""
    current = None
    for line in lines:
        text = re.sub(r"^==\d+== ?", "", line.rstrip("\n"))
        match = RECORD.match(text)
        if match:
            if current:
                yield current
            direct = int((match.group(2) or match.group(1)).replace(",", ""))
            current = (direct, [text])
        elif current and text.strip():
            current[1].append(text)
        elif current:
            yield current
            current = None
    if current:
        yield current


def is_ours(frame_lines):
    return any("quadrants/_core" in f or re.search(r": \?\?\?$", f) for f in frame_lines[1:])


def main(path):
    with open(path, errors="replace") as f:
        lines = f.readlines()
    if not any("LEAK SUMMARY" in line or "All heap blocks were freed" in line for line in lines):
        print(f"{path}: no leak summary (did the program exit normally?)", file=sys.stderr)
        return 2
    ours, others = [], []
    for direct, record in records(lines):
        (ours if is_ours(record) else others).append((direct, record))
    print(f"definitely lost: {sum(d for d, _ in ours)} bytes in {len(ours)} records from "
          f"quadrants, {sum(d for d, _ in others)} bytes in {len(others)} records elsewhere "
          f"(CPython, NumPy, LLVM)")
    for _, record in ours:
        print("\n".join(record), end="\n\n")
    return 1 if ours else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
