"""Curl proxy Lambda entry: build the app once per instance, hand each event to it."""

from workbench.lambda_runtime import lambda_handler_for
from workbench.proxy.app import create_proxy_app

handler = lambda_handler_for(create_proxy_app)
