"""The REST surface: POST /rest/{integration} (plain-JSON execute_tools) and scheduled jobs."""

from workbench.rest.app import create_rest_app, rest_routes
from workbench.rest.service import handle_schedule_event, run_rest, run_scheduled_job

__all__ = ["create_rest_app", "handle_schedule_event", "rest_routes", "run_rest", "run_scheduled_job"]
