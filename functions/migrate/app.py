"""Migration hook entry (CodeDeploy PreTraffic): the data brought to this version's schema before traffic shifts."""

from workbench.runtime.migrate_hook import handler

__all__ = ["handler"]
