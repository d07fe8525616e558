"""A test-only integration loaded through WORKBENCH_EXTRA_PLUGINS: tools that sleep and report how
many of them run at once (the engine's pool bound, seen from a real gateway process)."""

from workbench.manifest import Manifest, NoAuth

manifest = Manifest(name="probe", version="0.0.1", display_name="Probe", auth=NoAuth(), tool_prefix="probe_")
