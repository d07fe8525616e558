"""REST Lambda entry: build once per instance. API Gateway events go to POST /rest/{integration};
direct EventBridge Scheduler invocations (no requestContext) run a scheduled job."""

from workbench.rest.entry import rest_lambda_handler

handler = rest_lambda_handler()
