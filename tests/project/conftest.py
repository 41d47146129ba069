"""Project-structure tests: stage deps from the import graph, layering, packaging, docs.

Helpers live in ``import_graph`` beside this file.
"""

from __future__ import annotations

import sys
from pathlib import Path

# pytest runs with --import-mode=importlib (no sys.path changes): make import_graph importable.
sys.path.insert(0, str(Path(__file__).resolve().parent))
