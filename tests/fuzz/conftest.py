"""The fuzzer's modules import each other by name."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
