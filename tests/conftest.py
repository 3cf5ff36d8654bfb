"""Session-wide test settings.

`pytester` (scratch projects run in-process) is on for every folder.

Property tests explore freely on a developer's machine; under CI (`CI=true`, as `.ci/run` runs) they are
derandomized, so a submission's verdict never depends on the examples a random seed happened to draw. A failure
found locally is kept in `.hypothesis/` and should be pinned with `@example` next to its test.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")

pytest_plugins = ["pytester"]
