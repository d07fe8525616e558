"""REST Lambda entry: built once per instance. API Gateway events go to POST /rest/{integration};
direct EventBridge Scheduler invocations (no requestContext) run a scheduled job, and batches from the
audit queue (SQS) are written to the audit table."""

from workbench.runtime.lambda_handler import lambda_handler_for

handler = lambda_handler_for(
    "workbench.rest.app:create_rest_app",
    surface="rest",
    direct="workbench.rest.service:handle_direct_event",
)
