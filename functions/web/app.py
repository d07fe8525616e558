"""Web Lambda entry: OAuth authorization server, SSO sign-in, plugin callbacks, connect redeem,
portal and jots host. The gateway and app are built once per instance, on the first event."""

from workbench.runtime.lambda_handler import lambda_handler_for

handler = lambda_handler_for("workbench.web.app:create_web_app", surface="web")
