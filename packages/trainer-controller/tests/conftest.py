"""Makes ``runtime_cases`` (the test builders of trainer-runtime's tests) importable here."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "trainer-runtime" / "tests"))
