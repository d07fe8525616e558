"""No tools: the curl proxy is the only way this test integration is used."""

TOOLS: list[object] = []
