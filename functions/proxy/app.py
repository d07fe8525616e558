"""Curl proxy Lambda entry: build the app once per instance, hand each event to it."""

from workbench.runtime.lambda_handler import lambda_handler_for

handler = lambda_handler_for("workbench.proxy.app:create_proxy_app", surface="proxy")
