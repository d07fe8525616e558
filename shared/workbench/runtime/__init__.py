"""How the gateway runs: as a Lambda function behind API Gateway, or locally as one ASGI app on uvicorn.

The top layer: it builds the gateway (composition) and hands it the surfaces' apps."""
