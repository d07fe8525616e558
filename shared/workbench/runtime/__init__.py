"""How the gateway runs: as a Lambda function behind API Gateway, or locally as one ASGI app on uvicorn.

The top layer: it builds the gateway (composition) and hands it the surfaces' apps."""

import os as _os

if _os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
    # A Lambda entry (functions/*/app.py) imports this package first: the collector stays off for
    # the cold start, until lambda_handler has answered the first event (runtime/coldgc.py says why).
    from workbench.runtime import coldgc as _coldgc

    _coldgc.pause()
