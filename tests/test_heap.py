"""What `arena serve` does with the heap once its warm-up is built (`arena.app._settle_heap`)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

# in a fresh interpreter: freezing the test process would keep every later test's garbage for good
PROBE = """
import gc
from arena.app import GC_THRESHOLDS, _settle_heap
before = gc.get_freeze_count()
_settle_heap()
print(before, gc.get_freeze_count(), gc.get_threshold() == GC_THRESHOLDS)
"""


def test_the_start_ups_objects_leave_the_collectors_sight():
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    before, frozen, thresholds = result.stdout.split()
    assert int(before) == 0
    assert int(frozen) > 50_000  # the modules' own; in `arena serve`, the place-name index's 0.5 million too
    assert thresholds == "True"
