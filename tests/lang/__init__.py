# Package marker: tests/lang shares file basenames (test_atomics.py, test_math.py) with tests/codegen.
