from __future__ import annotations

TOOLS: list[object] = []
