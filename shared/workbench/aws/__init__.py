"""The AWS transport layer: the SigV4 JSON client (DynamoDB, KMS, Secrets Manager), KMS envelope
keys, Secrets Manager, JWT signing keys on DynamoDB, stack outputs and the API Gateway event adapter.

Nothing here knows a surface or a business rule; boto3 is imported only by the admin paths."""
