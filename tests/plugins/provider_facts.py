"""Facts from the providers' published API definitions, for the integrations whose definition no
registry package carries. Written by hand from the documents named per table (nothing copied);
each row: method, path template, the query parameter names and top-level body field names the
operation documents (a name starting with ^ is a pattern, for indexed names), and where the
provider publishes them, the OAuth scopes that grant it (any one of them).

Checked against the definitions as published in December 2026.
"""

from __future__ import annotations

from tests.plugins.provider_definitions import Op


def _ops(
    source: str, base: str, rows: list[tuple[str, str, str, str | None, str]], *, needs_all: bool = False
) -> list[Op]:
    return [
        Op(
            method,
            base + path,
            frozenset(query.split()),
            None if body is None else frozenset(body.split()),
            source,
            frozenset(scopes.split()),
            needs_all=needs_all,
        )
        for method, path, query, body, scopes in rows
    ]


# Jira Cloud platform REST API v3 (OpenAPI swagger-v3.v3.json) and Jira Software Cloud REST API
# (agile 1.0 OpenAPI), called through the OAuth 2.0 (3LO) gateway api.atlassian.com/ex/jira/{cloudId};
# accessible-resources from Atlassian's OAuth 2.0 (3LO) apps guide. Classic scopes.
_JIRA_ISSUE_BODY = "fields update historyMetadata properties transition"
JIRA = [
    Op(
        "GET",
        "https://api.atlassian.com/oauth/token/accessible-resources",
        frozenset(),
        frozenset(),
        "Atlassian OAuth 2.0 (3LO) apps: accessible-resources",
    ),
    *_ops(
        "Jira Cloud platform REST API v3 OpenAPI",
        "https://api.atlassian.com/ex/jira/{cloudId}/rest/api/3",
        [
            (
                "GET",
                "/search/jql",
                "jql nextPageToken maxResults fields expand properties fieldsByKeys failFast reconcileIssues",
                None,
                "read:jira-work",
            ),
            (
                "GET",
                "/issue/{issueIdOrKey}",
                "fields fieldsByKeys expand properties updateHistory failFast",
                None,
                "read:jira-work",
            ),
            ("POST", "/issue", "updateHistory", _JIRA_ISSUE_BODY, "write:jira-work"),
            (
                "PUT",
                "/issue/{issueIdOrKey}",
                "notifyUsers overrideScreenSecurity overrideEditableFlag returnIssue expand",
                _JIRA_ISSUE_BODY,
                "write:jira-work",
            ),
            ("DELETE", "/issue/{issueIdOrKey}", "deleteSubtasks", None, "write:jira-work"),
            # multipart/form-data, one `file` part per file; needs X-Atlassian-Token: no-check.
            ("POST", "/issue/{issueIdOrKey}/attachments", "", None, "write:jira-work"),
            (
                "PUT",
                "/issue/{issueIdOrKey}/assignee",
                "",
                "accountId accountType active applicationRoles avatarUrls displayName emailAddress expand "
                "groups key locale name self timeZone",
                "write:jira-work",
            ),
            (
                "GET",
                "/issue/{issueIdOrKey}/comment",
                "startAt maxResults orderBy expand",
                None,
                "read:jira-work",
            ),
            (
                "POST",
                "/issue/{issueIdOrKey}/comment",
                "expand",
                "author body created id jsdAuthorCanSeeRequest jsdPublic properties renderedBody self "
                "updateAuthor updated visibility",
                "write:jira-work",
            ),
            (
                "PUT",
                "/issue/{issueIdOrKey}/comment/{id}",
                "notifyUsers overrideEditableFlag expand",
                "author body created id jsdAuthorCanSeeRequest jsdPublic properties renderedBody self "
                "updateAuthor updated visibility",
                "write:jira-work",
            ),
            (
                "GET",
                "/issue/{issueIdOrKey}/transitions",
                "expand transitionId skipRemoteOnlyCondition includeUnavailableTransitions sortByOpsBarAndStatus",
                None,
                "read:jira-work",
            ),
            ("POST", "/issue/{issueIdOrKey}/transitions", "", _JIRA_ISSUE_BODY, "write:jira-work"),
            (
                "GET",
                "/issue/{issueIdOrKey}/worklog",
                "startAt maxResults startedAfter startedBefore expand",
                None,
                "read:jira-work",
            ),
            (
                "POST",
                "/issue/{issueIdOrKey}/worklog",
                "notifyUsers adjustEstimate newEstimate reduceBy expand overrideEditableFlag",
                "author comment created id issueId properties self started timeSpent timeSpentSeconds "
                "updateAuthor updated visibility",
                "write:jira-work",
            ),
            (
                "GET",
                "/issue/createmeta/{projectIdOrKey}/issuetypes",
                "startAt maxResults",
                None,
                "read:jira-work",
            ),
            (
                "GET",
                "/issue/createmeta/{projectIdOrKey}/issuetypes/{issueTypeId}",
                "startAt maxResults",
                None,
                "read:jira-work",
            ),
            ("POST", "/issueLink", "", "comment inwardIssue outwardIssue type", "write:jira-work"),
            ("GET", "/issueLinkType", "", None, "read:jira-work"),
            (
                "GET",
                "/project/search",
                "startAt maxResults orderBy id keys query typeKey categoryId action expand status properties "
                "propertyQuery",
                None,
                "read:jira-work",
            ),
            (
                "GET",
                "/user/search",
                "query username accountId startAt maxResults property",
                None,
                "read:jira-user",
            ),
        ],
    ),
    # Jira Software accepts no classic scope: each operation names the granular scopes it needs,
    # every one of them (Op.needs_all).
    *_ops(
        "Jira Software Cloud REST API (agile 1.0) OpenAPI",
        "https://api.atlassian.com/ex/jira/{cloudId}/rest/agile/1.0",
        [
            (
                "GET",
                "/board",
                "startAt maxResults type name projectKeyOrId accountIdLocation projectLocation includePrivate "
                "negateLocationFiltering orderBy expand projectTypeLocation filterId",
                None,
                "read:board-scope:jira-software read:project:jira",
            ),
            ("GET", "/board/{boardId}/sprint", "startAt maxResults state", None, "read:sprint:jira-software"),
            (
                "GET",
                "/sprint/{sprintId}/issue",
                "startAt maxResults jql validateQuery fields expand",
                None,
                "read:sprint:jira-software read:issue-details:jira read:jql:jira",
            ),
            (
                "POST",
                "/sprint/{sprintId}/issue",
                "",
                "issues rankAfterIssue rankBeforeIssue rankCustomFieldId",
                "write:sprint:jira-software",
            ),
        ],
        needs_all=True,
    ),
]

# Confluence Cloud REST API v2 OpenAPI (and v1 for CQL search), through api.atlassian.com/ex/confluence.
# Granular scopes.
CONFLUENCE = [
    JIRA[0],
    *_ops(
        "Confluence Cloud REST API v2 OpenAPI",
        "https://api.atlassian.com/ex/confluence/{cloudId}/wiki/api/v2",
        [
            (
                "GET",
                "/spaces",
                "ids keys type status labels favorited-by not-favorited-by sort description-format include-icon "
                "cursor limit",
                None,
                "read:space:confluence",
            ),
            (
                "GET",
                "/spaces/{id}/pages",
                "depth sort status title body-format cursor limit",
                None,
                "read:page:confluence",
            ),
            (
                "GET",
                "/pages/{id}",
                "body-format get-draft status version include-labels include-properties include-operations "
                "include-likes include-versions include-version include-favorited-by include-webresources "
                "include-collaborators",
                None,
                "read:page:confluence",
            ),
            (
                "POST",
                "/pages",
                "embedded private root-level",
                "spaceId status title parentId body subtype",
                "write:page:confluence",
            ),
            (
                "PUT",
                "/pages/{id}",
                "",
                "id status title spaceId parentId ownerId body version",
                "write:page:confluence",
            ),
            ("DELETE", "/pages/{id}", "purge draft", None, "delete:page:confluence"),
            ("GET", "/pages/{id}/children", "cursor limit sort", None, "read:page:confluence"),
            ("GET", "/pages/{id}/labels", "prefix sort cursor limit", None, "read:page:confluence"),
            (
                "GET",
                "/pages/{id}/footer-comments",
                "body-format status sort cursor limit",
                None,
                "read:comment:confluence",
            ),
            (
                "POST",
                "/footer-comments",
                "",
                "blogPostId pageId parentCommentId attachmentId customContentId body",
                "write:comment:confluence",
            ),
            (
                "GET",
                "/pages/{id}/attachments",
                "sort cursor status mediaType filename limit",
                None,
                "read:attachment:confluence",
            ),
            (
                "GET",
                "/pages/{id}/inline-comments",
                "body-format status resolution-status sort cursor limit",
                None,
                "read:comment:confluence",
            ),
            (
                "POST",
                "/inline-comments",
                "",
                "blogPostId pageId parentCommentId body inlineCommentProperties",
                "write:comment:confluence",
            ),
        ],
    ),
    *_ops(
        "Confluence Cloud REST API v1 OpenAPI (search)",
        "https://api.atlassian.com/ex/confluence/{cloudId}/wiki/rest/api",
        [
            (
                "GET",
                "/search",
                "cql cqlcontext cursor next prev limit start includeArchivedSpaces excludeCurrentSpaces excerpt "
                "sitePermissionTypeFilter _ expand",
                None,
                "search:confluence",
            ),
        ],
    ),
]

# HubSpot CRM API OpenAPI specs (objects v3, owners v3, pipelines v3, associations v4).
HUBSPOT = _ops(
    "HubSpot CRM OpenAPI (objects v3, owners v3, pipelines v3, associations v4)",
    "https://api.hubapi.com",
    [
        (
            "GET",
            "/crm/v3/objects/{objectType}",
            "limit after properties propertiesWithHistory associations archived",
            None,
            "",
        ),
        ("POST", "/crm/v3/objects/{objectType}", "", "properties associations", ""),
        (
            "GET",
            "/crm/v3/objects/{objectType}/{objectId}",
            "properties propertiesWithHistory associations archived idProperty",
            None,
            "",
        ),
        ("PATCH", "/crm/v3/objects/{objectType}/{objectId}", "idProperty", "properties", ""),
        (
            "POST",
            "/crm/v3/objects/{objectType}/search",
            "",
            "filterGroups sorts query properties limit after",
            "",
        ),
        # HubSpot's owners guide and reference name GET /crm/v3/owners (no trailing slash); the SDKs'
        # generated clients add one ("/crm/v3/owners/"), which the API also answers. The documented
        # path is the one kept (checked December 2026, developers.hubspot.com crm-owners-v3 guide).
        ("GET", "/crm/v3/owners", "email after limit archived", None, "crm.objects.owners.read"),
        ("GET", "/crm/v3/properties/{objectType}", "archived dataSensitivity locale properties", None, ""),
        ("GET", "/crm/v3/pipelines/{objectType}", "", None, ""),
        ("GET", "/crm/v3/pipelines/{objectType}/{pipelineId}", "", None, ""),
        (
            "GET",
            "/crm/v4/objects/{objectType}/{objectId}/associations/{toObjectType}",
            "after limit",
            None,
            "",
        ),
        (
            "PUT",
            "/crm/v4/objects/{fromObjectType}/{fromObjectId}/associations/default/{toObjectType}/{toObjectId}",
            "",
            None,
            "",
        ),
    ],
)

# Salesforce REST API Developer Guide (API version 62.0) and Reports and Dashboards REST API.
# Record bodies are the object's own fields, so they are not listed.
SALESFORCE = _ops(
    "Salesforce REST API Developer Guide v62.0",
    "https://{instance}/services/data/{version}",
    [
        ("GET", "/query", "q", None, "api"),
        ("GET", "/query/{queryLocator}", "", None, "api"),
        (
            "GET",
            "/parameterizedSearch/",
            r"q sobject overallLimit offset fields in dataCategory defaultLimit spellCorrection "
            r"updateTracking updateViewStat netWorkIds ^\w+\.(fields|where|limit|orderBy)$",
            None,
            "api",
        ),
        ("GET", "/recent", "limit", None, "api"),
        ("GET", "/sobjects", "", None, "api"),
        ("POST", "/sobjects/{sObject}", "", None, "api"),
        ("GET", "/sobjects/{sObject}/describe", "", None, "api"),
        ("GET", "/sobjects/{sObject}/{id}", "fields", None, "api"),
        ("PATCH", "/sobjects/{sObject}/{id}", "", None, "api"),
        ("DELETE", "/sobjects/{sObject}/{id}", "", None, "api"),
        ("GET", "/analytics/reports", "", None, "api"),
        ("GET", "/analytics/reports/{reportId}", "includeDetails", None, "api"),
    ],
)

# Airtable Web API reference (records, comments, metadata).
AIRTABLE = _ops(
    "Airtable Web API reference",
    "https://api.airtable.com/v0",
    [
        ("GET", "/meta/bases", "offset", None, "schema.bases:read"),
        ("GET", "/meta/bases/{baseId}/tables", r"^include\[\]$", None, "schema.bases:read"),
        ("POST", "/meta/bases/{baseId}/tables", "", "name description fields", "schema.bases:write"),
        (
            "POST",
            "/meta/bases/{baseId}/tables/{tableId}/fields",
            "",
            "name type description options",
            "schema.bases:write",
        ),
        (
            "GET",
            "/{baseId}/{tableIdOrName}",
            r"timeZone userLocale pageSize maxRecords offset view filterByFormula cellFormat "
            r"returnFieldsByFieldId ^fields\[\]$ ^sort\[\d+\]\[(field|direction)\]$ ^recordMetadata\[\]$",
            None,
            "data.records:read",
        ),
        (
            "POST",
            "/{baseId}/{tableIdOrName}",
            "",
            "records fields typecast returnFieldsByFieldId",
            "data.records:write",
        ),
        (
            "PATCH",
            "/{baseId}/{tableIdOrName}",
            "",
            "records performUpsert typecast returnFieldsByFieldId",
            "data.records:write",
        ),
        ("DELETE", "/{baseId}/{tableIdOrName}", r"^records\[\]$", None, "data.records:write"),
        (
            "GET",
            "/{baseId}/{tableIdOrName}/{recordId}",
            "cellFormat returnFieldsByFieldId timeZone userLocale",
            None,
            "data.records:read",
        ),
        (
            "GET",
            "/{baseId}/{tableIdOrName}/{recordId}/comments",
            "pageSize offset",
            None,
            "data.recordComments:read",
        ),
        (
            "POST",
            "/{baseId}/{tableIdOrName}/{recordId}/comments",
            "",
            "text parentCommentId",
            "data.recordComments:write",
        ),
    ],
)

# Zendesk Support API reference (ticketing), v2. API token auth: no OAuth scopes.
_ZD_PAGE = "page[size] page[after] page[before]"
ZENDESK = _ops(
    "Zendesk Support API v2 reference",
    "https://{subdomain}.zendesk.com/api/v2",
    [
        ("GET", "/tickets", f"{_ZD_PAGE} sort sort_by sort_order external_id", None, ""),
        # Help Center API (same site, same credential): article search, offset pages.
        (
            "GET",
            "/help_center/articles/search",
            "query locale category section label_names created_before created_after created_at "
            "updated_before updated_after updated_at sort_by sort_order brand_id multibrand page per_page",
            None,
            "",
        ),
        ("POST", "/tickets", "", "ticket", ""),
        ("GET", "/tickets/{ticket_id}", "include", None, ""),
        ("PUT", "/tickets/{ticket_id}", "", "ticket", ""),
        (
            "GET",
            "/tickets/{ticket_id}/comments",
            f"{_ZD_PAGE} include include_inline_images sort sort_order",
            None,
            "",
        ),
        ("GET", "/tickets/{ticket_id}/macros/{macro_id}/apply", "", None, ""),
        ("GET", "/search", "query sort_by sort_order page per_page include", None, ""),
        ("GET", "/users", f"{_ZD_PAGE} role role[] permission_set external_id", None, ""),
        ("POST", "/users", "", "user", ""),
        ("GET", "/users/search", "query external_id", None, ""),
        ("GET", "/organizations", _ZD_PAGE, None, ""),
        ("GET", "/groups", f"{_ZD_PAGE} exclude_deleted", None, ""),
        (
            "GET",
            "/macros",
            f"{_ZD_PAGE} access active category group_id include only_viewable sort_by sort_order",
            None,
            "",
        ),
        ("GET", "/views", f"{_ZD_PAGE} access active group_id sort_by sort_order", None, ""),
        ("GET", "/views/{view_id}/tickets", f"{_ZD_PAGE} sort_by sort_order", None, ""),
    ],
)

# Apache Superset REST API (openapi.json of Superset 4.x/5.x, /api/v1). The address is the user's own.
SUPERSET = _ops(
    "Apache Superset REST API openapi.json (/api/v1)",
    "https://{host}/api/v1",
    [
        ("POST", "/security/login", "", "username password provider refresh", ""),
        ("GET", "/security/csrf_token/", "", None, ""),
        ("GET", "/chart/", "q", None, ""),
        ("GET", "/chart/{pk}/data/", "format type force", None, ""),
        ("GET", "/dashboard/", "q", None, ""),
        ("GET", "/dashboard/{id_or_slug}", "", None, ""),
        ("GET", "/dashboard/{id_or_slug}/charts", "", None, ""),
        ("GET", "/database/", "q", None, ""),
        ("GET", "/database/{pk}/schemas/", "q", None, ""),
        ("GET", "/database/{pk}/table_metadata/", "name schema catalog", None, ""),
        ("GET", "/database/{pk}/tables/", "q", None, ""),
        ("GET", "/dataset/", "q", None, ""),
        ("GET", "/saved_query/", "q", None, ""),
        (
            "POST",
            "/sqllab/execute/",
            "",
            "catalog client_id ctas_method database_id expand_data json queryLimit runAsync schema "
            "select_as_cta sql sql_editor_id tab templateParams tmp_schema tmp_table_name",
            "",
        ),
        ("GET", "/sqllab/export/{client_id}/", "", None, ""),
    ],
)

# Linear: every request is POST /graphql; the query itself is validated against
# tests/plugins/linear_schema.graphql.
LINEAR = [
    Op(
        "POST",
        "https://api.linear.app/graphql",
        frozenset(),
        frozenset({"query", "variables"}),
        "Linear GraphQL API",
    ),
]

# Slack Web API method reference: the bot-token scopes each method needs. A conversation method
# reaches public channels, private channels, DMs and group DMs alike (any channel id may be
# given), so it needs the scope for each kind: every group below must be granted.
SLACK_SCOPES: dict[str, list[set[str]]] = {
    "chat.postMessage": [{"chat:write"}],
    "chat.update": [{"chat:write"}],
    "chat.delete": [{"chat:write"}],
    "chat.getPermalink": [],
    "conversations.list": [{"channels:read"}, {"groups:read"}, {"im:read"}, {"mpim:read"}],
    "conversations.info": [{"channels:read"}, {"groups:read"}, {"im:read"}, {"mpim:read"}],
    "conversations.history": [{"channels:history"}, {"groups:history"}, {"im:history"}, {"mpim:history"}],
    "conversations.replies": [{"channels:history"}, {"groups:history"}, {"im:history"}, {"mpim:history"}],
    "conversations.create": [{"channels:manage"}, {"groups:write"}],
    "conversations.join": [{"channels:join"}],
    "conversations.invite": [{"channels:manage"}, {"groups:write"}],
    "conversations.open": [{"im:write"}, {"mpim:write"}],
    "reactions.add": [{"reactions:write"}],
    "users.list": [{"users:read"}],
    "users.info": [{"users:read"}],
    "users.lookupByEmail": [{"users:read.email"}],
    "files.getUploadURLExternal": [{"files:write"}],
    "files.completeUploadExternal": [{"files:write"}],
    "search.messages": [{"search:read"}],
}

# Slack's file upload flow (files.getUploadURLExternal reference): the bytes go, as the raw body of
# a POST, to the upload_url it returns, on files.slack.com.
SLACK_UPLOAD = [
    Op(
        "POST",
        "https://files.slack.com/upload/v1/{+ticket}",
        frozenset(),
        None,
        "Slack Web API reference: files.getUploadURLExternal upload_url",
    ),
]

FACTS = {
    "atlassian-jira": JIRA,
    "atlassian-confluence": CONFLUENCE,
    "hubspot": HUBSPOT,
    "salesforce": SALESFORCE,
    "airtable": AIRTABLE,
    "zendesk": ZENDESK,
    "superset": SUPERSET,
    "linear": LINEAR,
}
