"""HubSpot CRM v3 tools (https://developers.hubspot.com/docs/api/crm/understanding-the-crm).

CRM objects answer `{id, properties, createdAt, updatedAt}`; lists page with `after` and return
`paging.next.after`. Only the properties named in `properties` come back, so each list/get tool
asks for a useful default set the caller can change.
"""

from __future__ import annotations

from typing import Any, Literal

from workbench.sdk import ToolError, api, pick, pick_many
from workbench.tools import ArgsModel, Field, ToolContext, tool

CONTACT_PROPS = [
    "email",
    "firstname",
    "lastname",
    "phone",
    "company",
    "jobtitle",
    "lifecyclestage",
    "hubspot_owner_id",
]
COMPANY_PROPS = [
    "name",
    "domain",
    "industry",
    "city",
    "country",
    "phone",
    "numberofemployees",
    "hubspot_owner_id",
]
DEAL_PROPS = ["dealname", "amount", "dealstage", "pipeline", "closedate", "hubspot_owner_id"]
TICKET_PROPS = [
    "subject",
    "content",
    "hs_pipeline",
    "hs_pipeline_stage",
    "hs_ticket_priority",
    "hs_ticket_category",
    "hubspot_owner_id",
    "createdate",
]

# HUBSPOT_DEFINED association type ids (https://developers.hubspot.com/docs/api/crm/associations).
_NOTE_TO = {"contact": 202, "company": 190, "deal": 214}
_DEAL_TO_CONTACT = 3
_DEAL_TO_COMPANY = 5  # deal -> company (primary)


def _record(obj: Any) -> dict[str, Any]:
    return pick(obj, "id", "properties", "createdAt", "updatedAt")


def _list(body: Any, key: str) -> dict[str, Any]:
    after = ((body.get("paging") or {}).get("next") or {}).get("after")
    out = {key: [_record(r) for r in body.get("results") or []], "nextCursor": after}
    if "total" in body:
        out["total"] = body["total"]
    return out


def _assoc(type_id: int, to_id: str) -> dict[str, Any]:
    return {
        "to": {"id": to_id},
        "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": type_id}],
    }


async def _list_objects(ctx: ToolContext, kind: str, args: Any, default_props: list[str]) -> Any:
    body = await api(
        ctx,
        "GET",
        f"/crm/v3/objects/{kind}",
        params={
            "limit": args.limit,
            "after": args.cursor,
            "properties": ",".join(args.properties or default_props),
        },
    )
    return _list(body, kind)


class Page(ArgsModel):
    limit: int = Field(default=20, ge=1, le=100, description="Results per page (max 100)")
    cursor: str | None = Field(default=None, description="nextCursor from the previous call")
    properties: list[str] | None = Field(
        default=None, description="Property names to return (default: common ones)"
    )


@tool(
    "hubspot_list_contacts",
    "List HubSpot contacts (people) with their main properties.",
    Page,
    scopes=("crm.objects.contacts.read",),
    keywords=("people", "leads", "customers", "show", "address book"),
)
async def list_contacts(args: Page, ctx: ToolContext) -> Any:
    return await _list_objects(ctx, "contacts", args, CONTACT_PROPS)


class GetContact(ArgsModel):
    contact_id: str = Field(
        description="Contact id (from hubspot_search_contacts or hubspot_list_contacts), or an email when id_property='email'"
    )
    id_property: Literal["hs_object_id", "email"] = Field(
        default="hs_object_id", description="What contact_id is: the record id or the contact's email"
    )
    properties: list[str] | None = Field(
        default=None, description="Property internal names to return (from hubspot_list_properties)"
    )


@tool(
    "hubspot_get_contact",
    "Get one HubSpot contact by id or by email address.",
    GetContact,
    scopes=("crm.objects.contacts.read",),
    keywords=("person", "lead", "details", "profile", "show", "look up"),
)
async def get_contact(args: GetContact, ctx: ToolContext) -> Any:
    obj = await api(
        ctx,
        "GET",
        f"/crm/v3/objects/contacts/{args.contact_id}",
        params={
            "properties": ",".join(args.properties or CONTACT_PROPS),
            "idProperty": args.id_property if args.id_property != "hs_object_id" else None,
        },
    )
    return _record(obj)


class Search(ArgsModel):
    query: str | None = Field(
        default=None, description="Free text matched against the default searchable properties"
    )
    filters: list[dict[str, Any]] | None = Field(
        default=None,
        description="HubSpot filters ANDed together, e.g. [{'propertyName': 'lifecyclestage', 'operator': 'EQ', "
        "'value': 'customer'}]",
    )
    limit: int = Field(default=20, ge=1, le=200, description="Results per page (max 200)")
    cursor: str | None = Field(default=None, description="nextCursor from the previous call")
    properties: list[str] | None = Field(
        default=None, description="Property internal names to return (from hubspot_list_properties)"
    )


async def _search(ctx: ToolContext, kind: str, args: Search, default_props: list[str]) -> Any:
    body: dict[str, Any] = {"limit": args.limit, "properties": args.properties or default_props}
    if args.query:
        body["query"] = args.query
    if args.filters:
        body["filterGroups"] = [{"filters": args.filters}]
    if args.cursor:
        body["after"] = args.cursor
    return _list(await api(ctx, "POST", f"/crm/v3/objects/{kind}/search", json=body), kind)


@tool(
    "hubspot_search_contacts",
    "Search HubSpot contacts by text (name, email, phone, company) or property filters.",
    Search,
    scopes=("crm.objects.contacts.read",),
    keywords=("find", "look up", "lead", "person", "by email", "phone"),
)
async def search_contacts(args: Search, ctx: ToolContext) -> Any:
    return await _search(ctx, "contacts", args, CONTACT_PROPS)


@tool(
    "hubspot_search_deals",
    "Search HubSpot deals by text or property filters (stage, amount, owner).",
    Search,
    scopes=("crm.objects.deals.read",),
    keywords=("find", "filter", "opportunities", "pipeline"),
)
async def search_deals(args: Search, ctx: ToolContext) -> Any:
    return await _search(ctx, "deals", args, DEAL_PROPS)


class CreateContact(ArgsModel):
    email: str | None = Field(default=None, description="Email address (HubSpot's unique key for contacts)")
    firstname: str | None = Field(default=None, description="First name")
    lastname: str | None = Field(default=None, description="Last name")
    phone: str | None = Field(default=None, description="Phone number")
    company: str | None = Field(default=None, description="Company name (text property)")
    jobtitle: str | None = Field(default=None, description="Job title")
    properties: dict[str, str] | None = Field(
        default=None,
        description="Any other contact properties by internal name (from hubspot_list_properties)",
    )


@tool(
    "hubspot_create_contact",
    "Create a HubSpot contact.",
    CreateContact,
    scopes=("crm.objects.contacts.write",),
    keywords=("new", "add", "lead", "person", "customer", "record"),
)
async def create_contact(args: CreateContact, ctx: ToolContext) -> Any:
    props = {k: v for k, v in args.model_dump(exclude={"properties"}).items() if v is not None}
    props.update(args.properties or {})
    return _record(await api(ctx, "POST", "/crm/v3/objects/contacts", json={"properties": props}))


class UpdateObject(ArgsModel):
    id: str = Field(description="Record id")
    properties: dict[str, str] = Field(
        description="Property values to set, by internal property name (from hubspot_list_properties)"
    )


@tool(
    "hubspot_update_contact",
    "Update properties of a HubSpot contact.",
    UpdateObject,
    scopes=("crm.objects.contacts.write",),
    keywords=("edit", "change", "modify", "phone", "email", "fix", "person"),
)
async def update_contact(args: UpdateObject, ctx: ToolContext) -> Any:
    return _record(
        await api(ctx, "PATCH", f"/crm/v3/objects/contacts/{args.id}", json={"properties": args.properties})
    )


@tool(
    "hubspot_list_companies",
    "List HubSpot companies with their main properties.",
    Page,
    scopes=("crm.objects.companies.read",),
    keywords=("accounts", "organisations", "businesses", "show"),
)
async def list_companies(args: Page, ctx: ToolContext) -> Any:
    return await _list_objects(ctx, "companies", args, COMPANY_PROPS)


class CreateCompany(ArgsModel):
    name: str = Field(description="Company name")
    domain: str | None = Field(default=None, description="Website domain, e.g. example.com")
    properties: dict[str, str] | None = Field(
        default=None, description="Any other company properties by name"
    )


@tool(
    "hubspot_create_company",
    "Create a HubSpot company.",
    CreateCompany,
    scopes=("crm.objects.companies.write",),
    keywords=("new", "add", "account", "organisation", "business"),
)
async def create_company(args: CreateCompany, ctx: ToolContext) -> Any:
    props = {"name": args.name, **({"domain": args.domain} if args.domain else {}), **(args.properties or {})}
    return _record(await api(ctx, "POST", "/crm/v3/objects/companies", json={"properties": props}))


@tool(
    "hubspot_list_deals",
    "List HubSpot deals (pipeline opportunities) with amount and stage.",
    Page,
    scopes=("crm.objects.deals.read",),
    keywords=("pipeline", "opportunities", "show", "forecast"),
)
async def list_deals(args: Page, ctx: ToolContext) -> Any:
    return await _list_objects(ctx, "deals", args, DEAL_PROPS)


class CreateDeal(ArgsModel):
    dealname: str = Field(description="Deal name")
    pipeline: str = Field(default="default", description="Pipeline id (hubspot_list_pipelines lists them)")
    dealstage: str | None = Field(
        default=None, description="Stage id in that pipeline (default: the pipeline's first stage)"
    )
    amount: str | None = Field(default=None, description="Deal amount, e.g. '1500.00'")
    closedate: str | None = Field(default=None, description="Expected close date (ISO 8601)")
    contact_id: str | None = Field(
        default=None, description="Associate the deal with this contact (id from hubspot_search_contacts)"
    )
    company_id: str | None = Field(
        default=None, description="Associate the deal with this company (id from hubspot_search_companies)"
    )


@tool(
    "hubspot_create_deal",
    "Create a HubSpot deal in a pipeline (first stage unless one is given), optionally linked to a "
    "contact and company.",
    CreateDeal,
    scopes=("crm.objects.deals.read", "crm.objects.deals.write"),
    keywords=("new", "add", "opportunity", "sale", "pipeline"),
)
async def create_deal(args: CreateDeal, ctx: ToolContext) -> Any:
    if args.dealstage is None:
        # Stage ids belong to one pipeline: look up this pipeline's first stage, never assume one.
        pipeline = await api(ctx, "GET", f"/crm/v3/pipelines/deals/{args.pipeline}")
        stages = sorted(pipeline.get("stages") or [], key=lambda s: s.get("displayOrder", 0))
        if not stages:
            raise ToolError(f"Pipeline '{args.pipeline}' has no stages; give dealstage.")
        args = args.model_copy(update={"dealstage": stages[0].get("id")})
    props = {
        k: v
        for k, v in args.model_dump(
            include={"dealname", "dealstage", "pipeline", "amount", "closedate"}
        ).items()
        if v is not None
    }
    body: dict[str, Any] = {"properties": props}
    assocs = []
    if args.contact_id:
        assocs.append(_assoc(_DEAL_TO_CONTACT, args.contact_id))
    if args.company_id:
        assocs.append(_assoc(_DEAL_TO_COMPANY, args.company_id))
    if assocs:
        body["associations"] = assocs
    return _record(await api(ctx, "POST", "/crm/v3/objects/deals", json=body))


@tool(
    "hubspot_update_deal",
    "Update a HubSpot deal (move stage, change amount or close date).",
    UpdateObject,
    scopes=("crm.objects.deals.write",),
    keywords=("edit", "change", "stage", "amount", "won", "lost", "close", "advance", "progress"),
)
async def update_deal(args: UpdateObject, ctx: ToolContext) -> Any:
    return _record(
        await api(ctx, "PATCH", f"/crm/v3/objects/deals/{args.id}", json={"properties": args.properties})
    )


class CreateNote(ArgsModel):
    body: str = Field(min_length=1, description="Note text (HTML allowed)")
    timestamp: str = Field(description="When the note happened (ISO 8601), e.g. 2024-05-01T10:00:00Z")
    contact_id: str | None = Field(
        default=None, description="Attach to this contact (id from hubspot_search_contacts)"
    )
    company_id: str | None = Field(
        default=None, description="Attach to this company (id from hubspot_search_companies)"
    )
    deal_id: str | None = Field(
        default=None, description="Attach to this deal (id from hubspot_search_deals)"
    )


@tool(
    "hubspot_create_note",
    "Log a note on a HubSpot contact, company or deal timeline.",
    CreateNote,
    scopes=("crm.objects.contacts.write",),
    keywords=("log", "record", "activity", "call notes", "comment", "timeline", "remark"),
)
async def create_note(args: CreateNote, ctx: ToolContext) -> Any:
    targets = [("contact", args.contact_id), ("company", args.company_id), ("deal", args.deal_id)]
    assocs = [_assoc(_NOTE_TO[kind], rid) for kind, rid in targets if rid]
    if not assocs:
        raise ValueError("Give at least one of contact_id, company_id or deal_id")
    body = {"properties": {"hs_timestamp": args.timestamp, "hs_note_body": args.body}, "associations": assocs}
    return _record(await api(ctx, "POST", "/crm/v3/objects/notes", json=body))


class ListOwners(ArgsModel):
    email: str | None = Field(default=None, description="Only the owner with this email")
    limit: int = Field(default=100, ge=1, le=500, description="Results per page (max 500)")
    cursor: str | None = Field(default=None, description="nextCursor from the previous call")


@tool(
    "hubspot_list_owners",
    "List HubSpot owners (users who can own records) with their ids.",
    ListOwners,
    scopes=("crm.objects.owners.read",),
    keywords=("users", "sales reps", "team members", "assignees"),
)
async def list_owners(args: ListOwners, ctx: ToolContext) -> Any:
    body = await api(
        ctx, "GET", "/crm/v3/owners", params={"email": args.email, "limit": args.limit, "after": args.cursor}
    )
    after = ((body.get("paging") or {}).get("next") or {}).get("after")
    return {
        "owners": pick_many(
            body.get("results"), "id", "email", "firstName", "lastName", "userId", "archived"
        ),
        "nextCursor": after,
    }


class ListProperties(ArgsModel):
    object_type: Literal["contacts", "companies", "deals", "tickets"] = Field(
        description="Which records' properties: contacts, companies, deals or tickets"
    )
    archived: bool = Field(default=False, description="List archived (deleted) properties instead")


@tool(
    "hubspot_list_properties",
    "List the properties (fields) of HubSpot contacts, companies, deals or tickets: the internal names "
    "other tools take, with labels, types and the allowed values of each.",
    ListProperties,
    scopes=("crm.objects.contacts.read", "crm.objects.companies.read", "crm.objects.deals.read", "tickets"),
    keywords=("fields", "columns", "schema", "internal names", "custom properties", "dropdown options"),
)
async def list_properties(args: ListProperties, ctx: ToolContext) -> Any:
    body = await api(
        ctx, "GET", f"/crm/v3/properties/{args.object_type}", params={"archived": str(args.archived).lower()}
    )
    out = []
    for prop in body.get("results") or []:
        item = pick(prop, "name", "label", "type", "fieldType", "groupName", "description")
        options = prop.get("options") or []
        if options:
            item["options"] = [o.get("value") for o in options if isinstance(o, dict)]
        if prop.get("modificationMetadata", {}).get("readOnlyValue"):
            item["readOnly"] = True
        out.append(item)
    return {"properties": out}


# -- companies and deals: read, search, update ----------------------------------------------------


class GetRecord(ArgsModel):
    id: str = Field(description="Record id")
    properties: list[str] | None = Field(
        default=None, description="Property names to return (default: common ones)"
    )


async def _get_object(ctx: ToolContext, kind: str, args: GetRecord, default_props: list[str]) -> Any:
    obj = await api(
        ctx,
        "GET",
        f"/crm/v3/objects/{kind}/{args.id}",
        params={"properties": ",".join(args.properties or default_props)},
    )
    return _record(obj)


@tool(
    "hubspot_get_company",
    "Get one HubSpot company by id with its main properties.",
    GetRecord,
    scopes=("crm.objects.companies.read",),
    keywords=("account", "organisation", "details", "show"),
)
async def get_company(args: GetRecord, ctx: ToolContext) -> Any:
    return await _get_object(ctx, "companies", args, COMPANY_PROPS)


@tool(
    "hubspot_search_companies",
    "Search HubSpot companies by text (name, domain, phone) or property filters.",
    Search,
    scopes=("crm.objects.companies.read",),
    keywords=("find", "look up", "account", "organisation", "domain"),
)
async def search_companies(args: Search, ctx: ToolContext) -> Any:
    return await _search(ctx, "companies", args, COMPANY_PROPS)


@tool(
    "hubspot_update_company",
    "Update properties of a HubSpot company.",
    UpdateObject,
    scopes=("crm.objects.companies.write",),
    keywords=("edit", "change", "account", "organisation"),
)
async def update_company(args: UpdateObject, ctx: ToolContext) -> Any:
    return _record(
        await api(ctx, "PATCH", f"/crm/v3/objects/companies/{args.id}", json={"properties": args.properties})
    )


@tool(
    "hubspot_get_deal",
    "Get one HubSpot deal by id: name, amount, pipeline, stage, close date, owner.",
    GetRecord,
    scopes=("crm.objects.deals.read",),
    keywords=("opportunity", "details", "show", "stage", "amount"),
)
async def get_deal(args: GetRecord, ctx: ToolContext) -> Any:
    return await _get_object(ctx, "deals", args, DEAL_PROPS)


# -- pipelines -------------------------------------------------------------------------------------


def _stage(s: Any) -> dict[str, Any]:
    meta = s.get("metadata") or {}
    out = {**pick(s, "id", "label", "displayOrder"), "probability": meta.get("probability")}
    if "ticketState" in meta:  # a ticket pipeline's stage: OPEN or CLOSED
        out["ticketState"] = meta["ticketState"]
    return out


def _pipeline(p: Any) -> dict[str, Any]:
    stages = sorted(p.get("stages") or [], key=lambda s: s.get("displayOrder", 0))
    return {
        **pick(p, "id", "label", "displayOrder", "archived"),
        "stages": [_stage(s) for s in stages],
    }


class ListPipelines(ArgsModel):
    object_type: Literal["deals", "tickets"] = Field(
        default="deals", description="Whose pipelines: deals (sales) or tickets (support statuses)"
    )


@tool(
    "hubspot_list_pipelines",
    "List HubSpot deal or ticket pipelines with their stages in order (ids for creating and moving "
    "deals and tickets).",
    ListPipelines,
    scopes=("crm.objects.deals.read", "tickets"),
    keywords=("stages", "funnel", "sales process", "ticket status", "support process"),
)
async def list_pipelines(args: ListPipelines, ctx: ToolContext) -> Any:
    body = await api(ctx, "GET", f"/crm/v3/pipelines/{args.object_type}")
    pipelines = sorted(body.get("results") or [], key=lambda p: p.get("displayOrder", 0))
    return {"pipelines": [_pipeline(p) for p in pipelines]}


# -- associations ----------------------------------------------------------------------------------

ObjectType = Literal["contacts", "companies", "deals"]


class ListAssociations(ArgsModel):
    object_type: ObjectType = Field(description="Type of the record whose links to list")
    object_id: str = Field(
        description="Id of that record (from hubspot_search_contacts, hubspot_search_companies or hubspot_search_deals)"
    )
    to_object_type: ObjectType = Field(description="Type of the linked records to list")
    limit: int = Field(default=100, ge=1, le=500, description="Results per page (max 500)")
    cursor: str | None = Field(default=None, description="nextCursor from the previous call")


@tool(
    "hubspot_list_associations",
    "List the HubSpot records linked to a contact, company or deal (e.g. a deal's contacts), with link labels.",
    ListAssociations,
    scopes=("crm.objects.contacts.read", "crm.objects.companies.read", "crm.objects.deals.read"),
    keywords=("related", "linked", "connected", "relationships"),
)
async def list_associations(args: ListAssociations, ctx: ToolContext) -> Any:
    body = await api(
        ctx,
        "GET",
        f"/crm/v4/objects/{args.object_type}/{args.object_id}/associations/{args.to_object_type}",
        params={"limit": args.limit, "after": args.cursor},
    )
    after = ((body.get("paging") or {}).get("next") or {}).get("after")
    return {
        "associations": [
            {
                "id": str(r.get("toObjectId")),
                "labels": [t.get("label") for t in r.get("associationTypes") or [] if t.get("label")],
            }
            for r in body.get("results") or []
        ],
        "nextCursor": after,
    }


class Associate(ArgsModel):
    object_type: ObjectType = Field(description="Type of the first record")
    object_id: str = Field(
        description="Id of the first record (from hubspot_search_contacts, hubspot_search_companies or hubspot_search_deals)"
    )
    to_object_type: ObjectType = Field(description="Type of the record to link it to")
    to_object_id: str = Field(
        description="Id of the record to link it to (from hubspot_search_contacts, hubspot_search_companies or hubspot_search_deals)"
    )


@tool(
    "hubspot_associate_records",
    "Link two HubSpot records with their default association (e.g. a contact to a company or a deal).",
    Associate,
    scopes=("crm.objects.contacts.write", "crm.objects.companies.write", "crm.objects.deals.write"),
    keywords=("link", "connect", "attach", "relate", "tie"),
)
async def associate_records(args: Associate, ctx: ToolContext) -> Any:
    path = (
        f"/crm/v4/objects/{args.object_type}/{args.object_id}/associations/default/"
        f"{args.to_object_type}/{args.to_object_id}"
    )
    body = await api(ctx, "PUT", path)
    return {
        "associated": True,
        "results": pick_many(
            (body or {}).get("results"), "from.id", "to.id", "associationSpec.associationTypeId"
        ),
    }


# -- tasks -----------------------------------------------------------------------------------------

# HUBSPOT_DEFINED task -> record association type ids.
_TASK_TO = {"contact": 204, "company": 192, "deal": 216}


class CreateTask(ArgsModel):
    subject: str = Field(min_length=1, max_length=1000, description="Task title")
    due: str = Field(description="Due time (ISO 8601), e.g. 2024-05-01T17:00:00Z")
    body: str | None = Field(default=None, max_length=65_000, description="Task notes")
    status: Literal["NOT_STARTED", "IN_PROGRESS", "WAITING", "COMPLETED", "DEFERRED"] = Field(
        default="NOT_STARTED", description="Task status"
    )
    priority: Literal["LOW", "MEDIUM", "HIGH"] | None = Field(default=None, description="Task priority")
    task_type: Literal["TODO", "CALL", "EMAIL"] = Field(default="TODO", description="Kind of task")
    owner_id: str | None = Field(default=None, description="Owner id to assign it to (hubspot_list_owners)")
    contact_id: str | None = Field(
        default=None, description="Link to this contact (id from hubspot_search_contacts)"
    )
    company_id: str | None = Field(
        default=None, description="Link to this company (id from hubspot_search_companies)"
    )
    deal_id: str | None = Field(default=None, description="Link to this deal (id from hubspot_search_deals)")


@tool(
    "hubspot_create_task",
    "Create a HubSpot task (to-do, call, email reminder) with a due date, optionally linked to records.",
    CreateTask,
    scopes=("crm.objects.contacts.write",),
    keywords=("todo", "reminder", "follow up", "call", "due"),
)
async def create_task(args: CreateTask, ctx: ToolContext) -> Any:
    props = {
        "hs_task_subject": args.subject,
        "hs_timestamp": args.due,
        "hs_task_body": args.body,
        "hs_task_status": args.status,
        "hs_task_priority": args.priority,
        "hs_task_type": args.task_type,
        "hubspot_owner_id": args.owner_id,
    }
    body: dict[str, Any] = {"properties": {k: v for k, v in props.items() if v is not None}}
    targets = [("contact", args.contact_id), ("company", args.company_id), ("deal", args.deal_id)]
    assocs = [_assoc(_TASK_TO[kind], rid) for kind, rid in targets if rid]
    if assocs:
        body["associations"] = assocs
    return _record(await api(ctx, "POST", "/crm/v3/objects/tasks", json=body))


# -- tickets ---------------------------------------------------------------------------------------

# HUBSPOT_DEFINED ticket -> record association type ids (ticket to company: the primary company).
_TICKET_TO = {"contact": 16, "company": 26, "deal": 28}
TicketPriority = Literal["LOW", "MEDIUM", "HIGH", "URGENT"]


@tool(
    "hubspot_list_tickets",
    "List HubSpot tickets (support requests) with subject, pipeline status and priority.",
    Page,
    scopes=("tickets",),
    keywords=("support", "help desk", "cases", "requests", "issues", "show"),
)
async def list_tickets(args: Page, ctx: ToolContext) -> Any:
    return await _list_objects(ctx, "tickets", args, TICKET_PROPS)


class GetTicket(GetRecord):
    id: str = Field(description="Ticket id (from hubspot_list_tickets or hubspot_search_tickets)")


@tool(
    "hubspot_get_ticket",
    "Get one HubSpot ticket by id: subject, description, pipeline status, priority, owner.",
    GetTicket,
    scopes=("tickets",),
    keywords=("support request", "case", "details", "show", "status"),
)
async def get_ticket(args: GetTicket, ctx: ToolContext) -> Any:
    return await _get_object(ctx, "tickets", args, TICKET_PROPS)


@tool(
    "hubspot_search_tickets",
    "Search HubSpot tickets by text (subject, description) or property filters (status, priority, owner).",
    Search,
    scopes=("tickets",),
    keywords=("find", "filter", "support", "open tickets", "cases", "requests"),
)
async def search_tickets(args: Search, ctx: ToolContext) -> Any:
    return await _search(ctx, "tickets", args, TICKET_PROPS)


class CreateTicket(ArgsModel):
    subject: str = Field(min_length=1, description="Ticket name (subject line)")
    content: str | None = Field(default=None, description="Ticket description")
    pipeline: str = Field(
        default="0",
        description="Ticket pipeline id (hubspot_list_pipelines with object_type 'tickets'; '0' is the default "
        "support pipeline)",
    )
    stage: str | None = Field(
        default=None,
        description="Status: a stage id of that pipeline (hubspot_list_pipelines with object_type 'tickets'); "
        "default: the pipeline's first stage",
    )
    priority: TicketPriority | None = Field(default=None, description="Ticket priority")
    owner_id: str | None = Field(default=None, description="Owner id to assign it to (hubspot_list_owners)")
    contact_id: str | None = Field(
        default=None, description="Link to this contact (id from hubspot_search_contacts)"
    )
    company_id: str | None = Field(
        default=None, description="Link to this company (id from hubspot_search_companies)"
    )
    deal_id: str | None = Field(default=None, description="Link to this deal (id from hubspot_search_deals)")
    properties: dict[str, str] | None = Field(
        default=None,
        description="Any other ticket properties by internal name (from hubspot_list_properties)",
    )


@tool(
    "hubspot_create_ticket",
    "Create a HubSpot ticket (support request) in a pipeline (first status unless one is given), "
    "optionally linked to a contact, company and deal.",
    CreateTicket,
    scopes=("tickets",),
    keywords=("new", "open", "support request", "case", "report", "help desk"),
)
async def create_ticket(args: CreateTicket, ctx: ToolContext) -> Any:
    stage = args.stage
    if stage is None:
        # Stage ids belong to one pipeline: look up this pipeline's first stage, never assume one.
        pipeline = await api(ctx, "GET", f"/crm/v3/pipelines/tickets/{args.pipeline}")
        stages = sorted(pipeline.get("stages") or [], key=lambda s: s.get("displayOrder", 0))
        if not stages:
            raise ToolError(f"Ticket pipeline '{args.pipeline}' has no stages; give stage.")
        stage = stages[0].get("id")
    props = {
        "subject": args.subject,
        "content": args.content,
        "hs_pipeline": args.pipeline,
        "hs_pipeline_stage": stage,
        "hs_ticket_priority": args.priority,
        "hubspot_owner_id": args.owner_id,
    }
    body: dict[str, Any] = {
        "properties": {**{k: v for k, v in props.items() if v is not None}, **(args.properties or {})}
    }
    targets = [("contact", args.contact_id), ("company", args.company_id), ("deal", args.deal_id)]
    assocs = [_assoc(_TICKET_TO[kind], rid) for kind, rid in targets if rid]
    if assocs:
        body["associations"] = assocs
    return _record(await api(ctx, "POST", "/crm/v3/objects/tickets", json=body))


class UpdateTicket(UpdateObject):
    id: str = Field(description="Ticket id (from hubspot_list_tickets or hubspot_search_tickets)")
    properties: dict[str, str] = Field(
        description="Property values to set by internal name (hubspot_list_properties), e.g. "
        "{'hs_pipeline_stage': '4'} to close it (stage ids: hubspot_list_pipelines)"
    )


@tool(
    "hubspot_update_ticket",
    "Update a HubSpot ticket (change its status, priority, owner or description).",
    UpdateTicket,
    scopes=("tickets",),
    keywords=("edit", "change", "close", "resolve", "reassign", "status", "priority"),
)
async def update_ticket(args: UpdateTicket, ctx: ToolContext) -> Any:
    return _record(
        await api(ctx, "PATCH", f"/crm/v3/objects/tickets/{args.id}", json={"properties": args.properties})
    )


TOOLS = [
    list_contacts,
    get_contact,
    search_contacts,
    create_contact,
    update_contact,
    list_companies,
    create_company,
    list_deals,
    search_deals,
    create_deal,
    update_deal,
    create_note,
    list_owners,
    list_properties,
    get_company,
    search_companies,
    update_company,
    get_deal,
    list_pipelines,
    list_associations,
    associate_records,
    create_task,
    list_tickets,
    get_ticket,
    search_tickets,
    create_ticket,
    update_ticket,
]
