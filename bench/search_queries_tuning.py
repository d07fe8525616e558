"""A tuning set of indirect goals for issue 27's third round (helper hsearchq), written and
committed BEFORE any tuning of that round, from the catalog's tool list only (the held-out sets B
in search_queries_untuned.py were not read).

INDIRECT_C: a situation or a symptom, not the action wanted, over all 20 integrations, in the
styles agents write (a user's complaint passed on, a terse note, a long first-person story, an
identifier instead of the service's name) and in the languages agents' users write in. Unlike the
held-out sets, this one is tuned on: bench/search.py reports it as a tuning set and `-v` lists
its misses.
"""

INDIRECT_C: list[tuple[str, str]] = [
    # Slack
    ("the team in #releases still thinks the deploy is blocked", "slack_send_message"),
    ("I posted the wrong number in my last slack message to the channel", "slack_update_message"),
    ("new hire can't see the #design channel yet", "slack_invite_to_channel"),
    ("what did people say in #incident while I was asleep", "slack_get_channel_history"),
    ("user says: there is no channel for the q3 launch yet on slack", "slack_create_channel"),
    # GitHub
    ("the CI build on acme/api failed for no reason, probably flaky", "github_rerun_workflow_run"),
    ("my branch is done and the team should look at it before it goes to main", "github_create_pr"),
    ("PR 42 in acme/web was approved and is ready to go in", "github_merge_pr"),
    ("the README in acme/docs still mentions the old install command", "github_create_or_update_file"),
    (
        "there is a crash on startup in acme/mobile that nobody has reported on github yet",
        "github_create_issue",
    ),
    ("why did the deploy job fail? I need to see what it printed", "github_get_job_logs"),
    # Jira
    ("PROJ-88 is done but the board still shows it in progress", "jira_transition_issue"),
    ("nobody is working on OPS-12", "jira_assign_issue"),
    ("the login bug isn't tracked in jira yet", "jira_create_issue"),
    ("I spent three hours on DEV-301 today and it isn't recorded", "jira_add_worklog"),
    ("the priority on WEB-5 is wrong, it should be high", "jira_update_issue"),
    # Confluence
    ("the onboarding page in confluence is out of date since we moved offices", "confluence_update_page"),
    ("we never wrote down the on-call runbook in the wiki", "confluence_create_page"),
    ("there's an old confluence page about the 2019 offsite nobody needs any more", "confluence_delete_page"),
    # Linear
    ("the checkout bug is fixed but linear still shows it open", "linear_update_issue"),
    ("the idea from the retro isn't in linear yet", "linear_create_issue"),
    ("I have no idea what is planned in the current linear cycle", "linear_list_cycle_issues"),
    # Notion
    ("the roadmap page in notion still says we ship in march", "notion_update_page"),
    ("I can't find the notion page where we wrote the hiring plan", "notion_search"),
    ("I want the same notion page structure for next week's sprint notes", "notion_duplicate_page"),
    ("the old meeting notes page in notion is just clutter now", "notion_archive_page"),
    # Airtable
    ("the inventory base in airtable says 40 chairs but we actually have 35", "airtable_update_records"),
    ("the new supplier isn't in our airtable table yet", "airtable_create_records"),
    ("recXyZ12345678ab is a duplicate entry", "airtable_delete_records"),
    # Google Calendar
    ("I'm double-booked on thursday at 2pm", "calendar_update_event"),
    ("the dentist appointment tomorrow is off, I'm not going", "calendar_delete_event"),
    ("I got an invite to the planning meeting and haven't answered it", "calendar_respond_to_event"),
    ("when are Ana and Li both free this week for a call", "calendar_find_free_busy"),
    # Gmail
    ("the customer emailed me two days ago and is still waiting for an answer", "gmail_reply_to_message"),
    ("I want to write the email to the board now but check it before it goes out", "gmail_create_draft"),
    ("somewhere in my inbox there's the invoice from the printer", "gmail_search_messages"),
    ("my inbox is full of newsletters I don't need", "gmail_trash_message"),
    # Google Drive
    ("the design spec is only on my laptop, the team can't get it", "google_drive_upload"),
    ("the contractor says they get access denied on the budget doc in drive", "google_drive_share_file"),
    ("the drive file has the wrong name, it should be Q3 plan", "google_drive_update_file"),
    ("who can see the salaries file on drive?", "google_drive_list_permissions"),
    # Google Sheets
    ("the totals row in the budget spreadsheet has the old numbers in B10:D10", "sheets_write_range"),
    ("this week's sales figures aren't in the tracker sheet yet", "sheets_append_rows"),
    ("the scratch cells A1:F20 in the sheet are leftovers from a test", "sheets_clear_range"),
    # HubSpot
    ("the deal with Acme closed last week but hubspot still says negotiation", "hubspot_update_deal"),
    ("met a new lead at the conference and she's not in hubspot yet", "hubspot_create_contact"),
    ("a customer complained by phone and it's not logged in hubspot", "hubspot_create_ticket"),
    ("the sales team has no idea who owns which hubspot accounts", "hubspot_list_owners"),
    # Salesforce
    ("the phone number on the Globex account in salesforce is outdated", "salesforce_update_record"),
    ("I don't know which fields the Opportunity object has in salesforce", "salesforce_describe_object"),
    (
        "the quarterly pipeline numbers, the ones in the salesforce report, what are they now",
        "salesforce_run_report",
    ),
    # Stripe
    ("customer cus_Q1w2E3r4T5y6U7 was charged twice for the same order", "stripe_create_refund"),
    ("this client doesn't want to pay for the pro plan any more", "stripe_cancel_subscription"),
    ("the customer says they never received their invoice from stripe", "stripe_send_invoice"),
    ("a customer is disputing a payment with their bank", "stripe_list_disputes"),
    # Zendesk
    ("a customer has been waiting three days on zendesk without a reply", "zendesk_add_comment"),
    ("the zendesk ticket about the refund is solved but still shows open", "zendesk_update_ticket"),
    ("a user called about a broken login and there's no zendesk ticket for it", "zendesk_create_ticket"),
    # Superset
    (
        "the revenue dashboard in superset looks wrong, I want the numbers behind the chart",
        "superset_get_chart_data",
    ),
    ("I don't know what columns the orders table has in superset", "superset_get_table_columns"),
    # Jots
    ("I keep forgetting the wifi password for the office, want it written down somewhere", "create_jot"),
    ("where did I put my notes from yesterday's call", "search_jots"),
    # Vault
    ("the stripe api key I stored was revoked and I have a new one", "vault_set"),
    ("I don't remember which secrets I already saved", "vault_list"),
    # Apps
    ("the tools of my custom app don't show up after I changed the server", "apps_refresh"),
    (
        "I have an MCP server running at https://tools.acme.dev/mcp and the agent can't use it yet",
        "apps_register_server",
    ),
    # Browser
    ("I want to see what the landing page looks like right now", "browser_screenshot"),
    ("the form on the page is waiting for me to hit the submit button", "browser_click"),
    # non-English
    ("el cliente dice que le cobraron dos veces en Stripe", "stripe_create_refund"),
    ("la página de Confluence sobre vacaciones está desactualizada", "confluence_update_page"),
    ("der Termin am Freitag kollidiert mit einem anderen Termin im Kalender", "calendar_update_event"),
    ("niemand kümmert sich um das Jira-Ticket SUP-77", "jira_assign_issue"),
    ("le client attend une réponse sur Zendesk depuis lundi", "zendesk_add_comment"),
    ("mon collègue n'a pas accès au document sur Google Drive", "google_drive_share_file"),
    ("o contato novo ainda não está no HubSpot", "hubspot_create_contact"),
    ("o build do CI no GitHub falhou sem motivo", "github_rerun_workflow_run"),
    ("Slackのチャンネルのみんながまだリリースのことを知らない", "slack_send_message"),
    ("Notionのロードマップのページが古いままです", "notion_update_page"),
    ("这个客户不想再为订阅付费了", "stripe_cancel_subscription"),
    ("我找不到那封关于合同的邮件", "gmail_search_messages"),
    ("Linear 이슈가 이미 해결됐는데 아직 열려 있어요", "linear_update_issue"),
    ("회의 시간이 다른 일정과 겹쳐요", "calendar_update_event"),
    ("ग्राहक से दो बार पैसे काट लिए गए, स्ट्राइप में", "stripe_create_refund"),
    ("Airtable की तालिका में नया सप्लायर अभी तक नहीं है", "airtable_create_records"),
]
