"""Observability: one logger, one metrics emitter, one tracer, their output shapes under test.

- `logs`: JSON lines, one formatter locally and on Lambda; `log_event` puts an engine event's fields
  at the top level of its line with the caller's location (tests/aws/test_log_lines.py).
- `metrics`: in-process counters and histograms; on Lambda, CloudWatch EMF once per request
  (tests/aws/test_observability.py).
- `tracing`: X-Ray subsegments sent straight to the daemon, no X-Ray SDK (tests/aws/test_observability.py).

The Lambda runtime (workbench.runtime.lambda_handler) wires them per request: the correlation id,
the EMF flush, the request's subsegment.
"""

from __future__ import annotations

from workbench.observability.logs import configure_logging, log_error, log_event, log_warning, logger
from workbench.observability.metrics import Metrics

__all__ = ["Metrics", "configure_logging", "log_error", "log_event", "log_warning", "logger"]
