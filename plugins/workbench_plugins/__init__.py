"""Plugin packages, one per integration. Each subpackage's `__init__` defines `manifest` only
(cheap to import); its `tools` module defines `TOOLS` and is imported on first use."""
