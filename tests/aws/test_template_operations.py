"""template.yaml as operations need it (issue 23): alarms and a dashboard named per stack, metrics in
a namespace of the stack's, canary deploys rolled back on alarms, the audit queue, and data that
survives: deletion protection, retained queues and tables, tables adoptable by name."""

from __future__ import annotations

from typing import Any

import pytest
from workbench.observability.metrics import ALARMED, EMF_UNITS
from workbench.stores.dynamodb import TABLES

from tests.support.aws import load_template, table_name_of

T = load_template()
RESOURCES: dict[str, Any] = T["Resources"]
# The four surfaces (the deploy's migration hook, MigrateHookFunction, has no routes: its own test).
FUNCTIONS = {
    k: v
    for k, v in RESOURCES.items()
    if v["Type"] == "AWS::Serverless::Function" and k != "MigrateHookFunction"
}
ALARMS = {k: v["Properties"] for k, v in RESOURCES.items() if v["Type"] == "AWS::CloudWatch::Alarm"}
NAMESPACE = {"Fn::Sub": "Workbench/${AWS::StackName}"}
ACTIONS = {"Fn::If": ["HasAlarmAction", [{"Ref": "AlarmActionArn"}], {"Ref": "AWS::NoValue"}]}


def _statements(fn: str) -> list[Any]:
    return [s for p in FUNCTIONS[fn]["Properties"]["Policies"] for s in p["Statement"] if "Action" in s]


def test_every_alarm_is_named_for_its_stack_and_notifies_the_optional_topic() -> None:
    assert len(ALARMS) >= 20
    for logical, alarm in ALARMS.items():
        assert alarm["AlarmName"]["Fn::Sub"].startswith("${AWS::StackName}-"), logical
        assert alarm["AlarmActions"] == ACTIONS, logical
        assert alarm["TreatMissingData"] == "notBreaching", logical


@pytest.mark.parametrize("surface", ["Mcp", "Rest", "Web", "Proxy"])
def test_each_function_alarms_on_errors_throttles_and_a_p99_near_its_limit(surface: str) -> None:
    function = {"Name": "FunctionName", "Value": {"Ref": f"{surface}Function"}}
    errors, throttles, duration = (ALARMS[f"{surface}{k}Alarm"] for k in ("Errors", "Throttles", "Duration"))
    assert (errors["MetricName"], errors["Dimensions"], errors["Threshold"]) == ("Errors", [function], 0)
    assert (throttles["MetricName"], throttles["Dimensions"]) == ("Throttles", [function])
    assert duration["MetricName"] == "Duration" and duration["ExtendedStatistic"] == "p99"
    timeout_ms = T["Globals"]["Function"]["Timeout"] * 1000
    assert timeout_ms - 5000 <= duration["Threshold"] < timeout_ms
    # Canary traffic shifting behind the `live` alias, rolled back when either alarm fires.
    preference = FUNCTIONS[f"{surface}Function"]["Properties"]["DeploymentPreference"]
    assert preference["Type"] == {"Ref": "DeploymentType"}
    assert preference["Alarms"] == [{"Ref": f"{surface}ErrorsAlarm"}, {"Ref": f"{surface}DurationAlarm"}]
    assert T["Parameters"]["DeploymentType"]["Default"].startswith("Canary")


def test_api_dynamodb_refresh_and_audit_alarms() -> None:
    api = [{"Name": "ApiId", "Value": {"Ref": "HttpApi"}}, {"Name": "Stage", "Value": "$default"}]
    assert (ALARMS["Api5xxAlarm"]["MetricName"], ALARMS["Api5xxAlarm"]["Dimensions"]) == ("5xx", api)
    assert ALARMS["ApiLatencyAlarm"]["ExtendedStatistic"] == "p99"
    throttles = ALARMS["DynamoDbThrottlesAlarm"]["Metrics"]
    tables = {m["MetricStat"]["Metric"]["Dimensions"][0]["Value"]["Fn::If"][1]["Ref"] for m in throttles[1:]}
    assert {"AuditTable", "ConnectionsTable"} <= tables
    # The engine's own counters: in the stack's namespace, one series each (no dimensions).
    for logical, metric in (
        ("TokenRefreshFailuresAlarm", "workbench_token_refresh_failures_total"),
        ("AuditRowsDeferredAlarm", "workbench_audit_rows_deferred_total"),
        ("AuditRowsDroppedAlarm", "workbench_audit_rows_dropped_total"),
    ):
        alarm = ALARMS[logical]
        assert (alarm["Namespace"], alarm["MetricName"], alarm.get("Dimensions")) == (NAMESPACE, metric, None)
        assert metric in EMF_UNITS and metric in ALARMED
    for logical, queue in (
        ("AuditDeadLetterAlarm", "AuditDeadLetterQueue"),
        ("ScheduleDeadLetterAlarm", "ScheduleDeadLetterQueue"),
    ):
        assert ALARMS[logical]["Dimensions"] == [
            {"Name": "QueueName", "Value": {"Fn::GetAtt": f"{queue}.QueueName"}}
        ]


def test_metrics_carry_the_stack_and_the_dashboard_is_the_stacks() -> None:
    env = T["Globals"]["Function"]["Environment"]["Variables"]
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == NAMESPACE
    dashboard = RESOURCES["Dashboard"]["Properties"]
    assert dashboard["DashboardName"] == {"Fn::Sub": "${AWS::StackName}-workbench"}
    body, names = dashboard["DashboardBody"]["Fn::Sub"]
    assert names["Namespace"] == NAMESPACE
    for surface in ("Mcp", "Rest", "Web", "Proxy"):
        assert "${" + surface + "Function}" in body


def test_audit_rows_dynamodb_throttles_go_to_a_retained_queue_the_rest_function_drains() -> None:
    env = T["Globals"]["Function"]["Environment"]["Variables"]
    assert env["WORKBENCH_AUDIT_QUEUE_URL"] == {"Ref": "AuditRetryQueue"}
    queue = RESOURCES["AuditRetryQueue"]
    assert queue["DeletionPolicy"] == queue["UpdateReplacePolicy"] == "Retain"
    redrive = queue["Properties"]["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": "AuditDeadLetterQueue.Arn"}
    assert RESOURCES["AuditDeadLetterQueue"]["DeletionPolicy"] == "Retain"
    assert queue["Properties"]["VisibilityTimeout"] >= 6 * T["Globals"]["Function"]["Timeout"]
    mapping = RESOURCES["AuditRetryMapping"]["Properties"]
    assert mapping["FunctionName"] == {"Ref": "RestFunction.Alias"}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    for fn in FUNCTIONS:
        sqs = {
            a
            for s in _statements(fn)
            for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
            if a.startswith("sqs:")
        }
        expected = {
            "McpFunction": {"sqs:SendMessage"},
            "ProxyFunction": {"sqs:SendMessage"},
            "WebFunction": set(),  # the portal writes no audit rows
            "RestFunction": {
                "sqs:SendMessage",
                "sqs:ReceiveMessage",
                "sqs:DeleteMessage",
                "sqs:ChangeMessageVisibility",
                "sqs:GetQueueAttributes",
            },
        }[fn]
        assert sqs == expected, fn


def test_tables_are_protected_retained_and_adoptable_by_name() -> None:
    assert T["Parameters"]["DeletionProtection"]["Default"] == "Enabled"
    for logical in TABLES.values():
        table = RESOURCES[logical]
        assert table["Condition"] == f"Create{logical}"
        assert T["Conditions"][f"Create{logical}"] == {"Fn::Equals": [{"Ref": f"Adopt{logical}"}, ""]}
        assert table["Properties"]["DeletionProtectionEnabled"] == {"Fn::If": ["ProtectTables", True, False]}
        # Kept when the stack is deleted or replaces it (a protected table could not be deleted anyway).
        assert table["DeletionPolicy"] == "RetainExceptOnCreate" and table["UpdateReplacePolicy"] == "Retain"
        assert table_name_of(logical) in [o["Value"] for o in T["Outputs"].values()]
    assert RESOURCES["ScheduleDeadLetterQueue"]["DeletionPolicy"] == "Retain"


def test_every_deploy_migrates_the_data_before_traffic_shifts() -> None:
    hook = RESOURCES["MigrateHookFunction"]["Properties"]
    # SAM's CodeDeploy role may only invoke functions named CodeDeployHook_*.
    assert hook["FunctionName"] == {"Fn::Sub": "CodeDeployHook_${AWS::StackName}-migrate"}
    assert hook["Handler"] == "app.handler" and hook["CodeUri"] == "functions/migrate/"
    preference = FUNCTIONS["RestFunction"]["Properties"]["DeploymentPreference"]
    assert preference["Hooks"] == {"PreTraffic": {"Ref": "MigrateHookFunction"}}
