"""System patterns, progress entries, the glossary and other custom data of the Quillbill project."""

from __future__ import annotations

from typing import Any


def S(key: str, name: str, description: str, tags: list[str]) -> dict[str, Any]:
    return {"id": key, "type": "system_pattern", "name": name, "description": description, "tags": tags}


def T(key: str, status: str, description: str, parent: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"id": key, "type": "progress", "status": status, "description": description}
    if parent:
        item["parent"] = parent
    return item


def G(key: str, term: str, definition: str) -> dict[str, Any]:
    return {"id": key, "type": "custom_data", "category": "ProjectGlossary", "key": term, "value": definition}


def C(key: str, category: str, name: str, value: Any) -> dict[str, Any]:
    return {"id": key, "type": "custom_data", "category": category, "key": name, "value": value}


PATTERNS = [
    S(
        "pat-unit-of-work",
        "Unit of work per request",
        "Each API request opens one SQLAlchemy AsyncSession through the get_uow() dependency and commits once at "
        "the end; services never commit. Jobs use `async with UnitOfWork() as uow:` the same way.",
        ["backend", "database"],
    ),
    S(
        "pat-repositories",
        "Repositories return domain objects",
        "InvoiceRepository, ClientRepository and PaymentRepository wrap queries and return dataclasses from "
        "app/domain/, so routers and services never build SQL. Repositories take the tenant from TenantSession.",
        ["backend", "database"],
    ),
    S(
        "pat-tenant-session",
        "TenantSession sets the tenant per transaction",
        "TenantSession.begin(org_id) runs SET LOCAL app.org_id before the first statement so that the row-level "
        "security policies apply. Code that must cross tenants (billing sync, admin tools) uses "
        "SystemSession and is listed in docs/cross-tenant.md.",
        ["database", "tenancy", "security"],
    ),
    S(
        "pat-money-type",
        "Money is a value object",
        "All amounts go through app.money.Money: add and subtract check the currency, allocate() splits an "
        "amount without losing cents (largest remainder), and format() uses Babel with the document locale. "
        "Never pass bare ints for amounts across module boundaries.",
        ["money", "backend"],
    ),
    S(
        "pat-outbox",
        "Transactional outbox for events",
        "Domain events (InvoiceFinalised, PaymentReceived) are written to the outbox table in the same "
        "transaction as the change; the job relay_outbox publishes them to Dramatiq and outgoing webhooks every "
        "second and marks them sent. No event is lost if the process dies after commit.",
        ["backend", "jobs", "reliability"],
    ),
    S(
        "pat-idempotent-handlers",
        "Idempotent handlers keyed by a natural id",
        "Webhook handlers, reminders and jobs record what they did under a key (event id, invoice id + step) in "
        "a table with a unique constraint, insert first, and treat IntegrityError as already done.",
        ["reliability", "jobs", "webhooks"],
    ),
    S(
        "pat-state-machine-invoice",
        "Invoice status is a state machine",
        "InvoiceStateMachine in app/domain/invoice_states.py lists the allowed transitions: DRAFT -> FINALISED "
        "-> SENT -> PARTIALLY_PAID -> PAID, and VOID from FINALISED or SENT. Services call "
        "invoice.transition(to) which raises InvalidTransition; status is never assigned directly.",
        ["invoices", "backend"],
    ),
    S(
        "pat-settings-pydantic",
        "Configuration through one Settings object",
        "app/settings.py defines Settings(BaseSettings) with every environment variable (DATABASE_URL, "
        "PG_POOL_SIZE, REDIS_URL, STRIPE_API_KEY, POSTMARK_TOKEN, ...). It is built once in main.py and "
        "passed down; nothing else reads os.environ.",
        ["configuration", "backend"],
    ),
    S(
        "pat-feature-module-layout",
        "Feature module layout",
        "Each domain (invoices, clients, payments, billing, reports) has router.py, schemas.py, service.py, "
        "repository.py and tests next to it under app/<domain>/. Cross-domain calls go through services, never "
        "repositories.",
        ["backend", "architecture"],
    ),
    S(
        "pat-api-schemas",
        "Separate request and response schemas",
        "InvoiceCreate, InvoiceUpdate and InvoiceOut are distinct Pydantic models; response models never expose "
        "internal fields like org_id or access token hashes. OpenAPI examples live on the schema classes.",
        ["api", "backend"],
    ),
    S(
        "pat-error-mapping",
        "Domain errors mapped once to HTTP problems",
        "Services raise DomainError subclasses (NotFound, Conflict, QuotaExceeded, InvalidTransition); "
        "app/api/errors.py maps each to a ProblemDetail with a stable code. Routers contain no try/except.",
        ["api", "backend"],
    ),
    S(
        "pat-permissions-dependency",
        "Permissions as route dependencies",
        "Routes declare Depends(require_role(Role.ADMIN)) or Depends(require_scope('invoices:write')) for API "
        "keys. A test walks every route and fails if one has no permission dependency.",
        ["auth", "permissions", "testing"],
    ),
    S(
        "pat-background-actor",
        "Writing a background job",
        "Actors live in app/jobs/<name>.py, take only ids and primitive values, open their own UnitOfWork, "
        "are idempotent, and declare queue_name and time_limit. Enqueue after commit with uow.after_commit(...) "
        "so a rolled-back transaction never starts a job.",
        ["jobs", "backend"],
    ),
    S(
        "pat-after-commit",
        "Side effects after commit",
        "Emails, webhooks and job enqueues are registered with uow.after_commit(callback) and run only when the "
        "transaction committed; if the callback fails it is logged and retried by the outbox, never re-running "
        "the transaction.",
        ["backend", "reliability"],
    ),
    S(
        "pat-pdf-render",
        "Rendering a document",
        "DocumentRenderer.render(invoice, locale) builds the context, renders templates/invoice/<template>.html "
        "with Jinja2, runs WeasyPrint and, for DE/FR customers, embeds the Factur-X XML. Rendered PDFs are "
        "cached in S3 by content hash until finalisation archives them.",
        ["pdf", "invoices"],
    ),
    S(
        "pat-template-variables",
        "Invoice template variables",
        "Templates receive invoice, seller, client, lines, totals_by_rate and t() for translations. New "
        "variables are added to TemplateContext and documented in docs/templates.md so that customers' custom "
        "templates keep working.",
        ["pdf", "invoices", "frontend"],
    ),
    S(
        "pat-cache-aside",
        "Cache-aside with explicit busting",
        "Read: cache.get_or_set(key, loader, ttl). Write paths call the matching bust function "
        "(DashboardCache.bust, PlanLimitsCache.bust) after commit. TTLs are short (60 s) so a missed bust heals "
        "by itself.",
        ["caching"],
    ),
    S(
        "pat-rate-limiter",
        "Sliding-window rate limits in Redis",
        "RateLimiter.hit(bucket, limit, window) uses a sorted set per bucket with ZADD, ZREMRANGEBYSCORE and "
        "ZCARD in one MULTI. Buckets: api key, login email hash, password reset per IP.",
        ["redis", "security", "api"],
    ),
    S(
        "pat-react-feature-folders",
        "Frontend feature folders",
        "web/src/features/<feature>/ holds its routes, components, hooks and api calls; shared UI lives in "
        "web/src/ui/. A feature imports from another only through its index.ts.",
        ["frontend", "architecture"],
    ),
    S(
        "pat-react-forms",
        "Forms with react-hook-form and zod",
        "Every form uses react-hook-form with a zod schema generated next to the OpenAPI types; server "
        "validation errors (problem details with field paths) are mapped back onto fields by "
        "applyServerErrors().",
        ["frontend"],
    ),
    S(
        "pat-optimistic-updates",
        "Optimistic updates only for reversible actions",
        "Marking a reminder as read or archiving a client updates the cache before the request; finalising, "
        "sending or paying never does, they wait for the server.",
        ["frontend", "invoices"],
    ),
    S(
        "pat-query-invalidation",
        "Query invalidation after mutations",
        "Mutations call queryClient.invalidateQueries with keys from queryKeys; invoice mutations also "
        "invalidate the dashboard totals. No manual cache writes outside optimistic updates.",
        ["frontend", "caching"],
    ),
    S(
        "pat-migration-review",
        "Reviewing a migration",
        "Check: expand/contract respected, indexes created CONCURRENTLY in a separate migration with "
        "transactional = False, backfills done by a job in batches of 1,000, lock_timeout set to 3 s, and a "
        "downgrade that works.",
        ["database", "migrations", "process"],
    ),
    S(
        "pat-backfill-job",
        "Backfills in batches",
        "Data backfills run as a Dramatiq job that processes 1,000 rows per transaction ordered by id, stores "
        "its last id in job_checkpoints and can be resumed. Never UPDATE a whole table in a migration.",
        ["database", "jobs", "migrations"],
    ),
    S(
        "pat-feature-flag-lifecycle",
        "Feature flag lifecycle",
        "A flag is created off, enabled for the internal org, then beta orgs, then 100%; the cleanup ticket is "
        "opened when the flag is created and the code path removed within two releases.",
        ["release", "process"],
    ),
    S(
        "pat-structured-logging",
        "How to log",
        "Use log = structlog.get_logger(); log.info('invoice.finalised', invoice_id=..., amount_minor=...). "
        "Event names are dotted nouns and verbs; context like org_id and request_id is bound by middleware. "
        "Never log personal data or document contents.",
        ["observability", "logging"],
    ),
    S(
        "pat-tracing-spans",
        "Custom spans around external calls",
        "Calls to Stripe, Postmark, Storecove and S3 are wrapped in tracer.start_as_current_span('stripe.<op>') "
        "with attributes for the org and the object id, so slow partners show up in Tempo.",
        ["observability", "integrations"],
    ),
    S(
        "pat-runbook-format",
        "Runbook format",
        "Each runbook in docs/runbooks/ starts with symptoms, then the dashboard link, diagnosis commands, the "
        "fix, and how to verify it. Alerts link to their runbook by the annotation runbook_url.",
        ["observability", "process"],
    ),
    S(
        "pat-incident-review",
        "Blameless incident review within five working days",
        "Every customer-visible incident gets a write-up: timeline, impact, contributing factors, follow-ups "
        "with owners. Reviews are read in the Thursday engineering meeting.",
        ["process", "reliability"],
    ),
    S(
        "pat-pr-size",
        "Small pull requests",
        "Aim for under 400 changed lines; larger changes are split behind a feature flag. The description says "
        "why, how it was tested and how to roll back.",
        ["process"],
    ),
    S(
        "pat-test-layers",
        "Test layers",
        "Unit tests for domain code (money, tax, state machine) without a database; service tests against "
        "Postgres with factories; API tests through httpx.AsyncClient on the ASGI app; a handful of Playwright "
        "journeys. Mark slow tests with @pytest.mark.slow for nightly.",
        ["testing"],
    ),
    S(
        "pat-external-fakes",
        "Fakes for external services in tests",
        "FakeStripe, FakePostmark and FakeStorecove implement the same client protocols as the real clients and "
        "record calls; they are injected through the Settings-built container. Contract tests run the real "
        "clients against the sandboxes nightly.",
        ["testing", "integrations"],
    ),
    S(
        "pat-time-freezing",
        "Controlling time in tests",
        "Code takes a Clock (app.clock.Clock) instead of calling datetime.now(); tests pass FrozenClock. Due "
        "dates, reminders and trials are all tested this way.",
        ["testing", "backend"],
    ),
    S(
        "pat-webhook-signature",
        "Verifying incoming webhooks",
        "Each provider's webhook route verifies its signature before parsing the body (stripe.Webhook."
        "construct_event, Postmark basic auth, Storecove HMAC) and rejects events older than 5 minutes.",
        ["webhooks", "security"],
    ),
    S(
        "pat-outgoing-webhook-delivery",
        "Delivering outgoing webhooks",
        "WebhookDelivery rows are created from outbox events; the deliver_webhook actor posts with a 10 s "
        "timeout and retries at 1 min, 5 min, 30 min, 2 h, then every 6 h for 3 days; endpoints failing for 3 "
        "days are disabled and the owner is emailed.",
        ["webhooks", "api", "jobs"],
    ),
    S(
        "pat-email-sending",
        "Sending an email",
        "Build a Message with EmailComposer.compose(template, locale, context); send through "
        "Mailer.send(message, stream) after commit. The message id from Postmark is stored on email_log for "
        "bounce and open tracking.",
        ["email"],
    ),
    S(
        "pat-i18n-documents",
        "Translating documents",
        "Invoice documents use the client's language, not the user's; strings live in "
        "app/i18n/documents/{lang}.po and are compiled in the Docker build. Dates and amounts are formatted "
        "with Babel for the document locale.",
        ["i18n", "invoices", "pdf"],
    ),
    S(
        "pat-health-checks",
        "Liveness and readiness",
        "GET /healthz/live answers without touching dependencies; /healthz/ready checks Postgres and Redis with "
        "a 1 s timeout. ECS uses ready for the load balancer and live for restarts.",
        ["deployment", "reliability"],
    ),
    S(
        "pat-graceful-shutdown",
        "Graceful shutdown of workers",
        "Workers handle SIGTERM by finishing the current message within 30 s (ECS stopTimeout 60 s); "
        "unfinished messages are requeued by Dramatiq and must be idempotent.",
        ["jobs", "deployment"],
    ),
    S(
        "pat-config-per-env",
        "Environment configuration",
        "Defaults in Settings suit local development; staging and production override through task "
        "definitions. Anything that differs between environments must be a setting, never an "
        "`if env == 'production'` in code.",
        ["configuration", "deployment"],
    ),
    S(
        "pat-audit-record",
        "Recording audit events",
        "Services call AuditLog.record(actor, action, target, diff) inside the same unit of work as the change. "
        "Action names are past-tense verbs like bank_details.changed; diffs omit secrets.",
        ["compliance", "security"],
    ),
    S(
        "pat-pagination-helper",
        "Paginating list endpoints",
        "Use paginate(query, cursor, limit) from app/api/pagination.py: it orders by (created_at, id), decodes "
        "and validates the cursor and returns Page[T] with next_cursor.",
        ["api", "database"],
    ),
    S(
        "pat-quota-check",
        "Checking plan limits",
        "Before creating seats, invoices or templates, services call QuotaGuard.check(org, Resource.X). "
        "Limits come from PlanLimits.for_org(org), cached 60 s in PlanLimitsCache.",
        ["billing", "plans"],
    ),
    S(
        "pat-stripe-sync",
        "Keeping Stripe and our database in sync",
        "Our database is the source of truth for plans and seats; Stripe for payment state. Changes we "
        "initiate go to Stripe first and are confirmed by webhook; we never write subscription status without "
        "a webhook.",
        ["billing", "stripe"],
    ),
    S(
        "pat-dto-dates",
        "Dates and times",
        "Store timestamps as timestamptz in UTC; invoice dates (issue date, due date) are plain dates in the "
        "organisation's time zone, never timestamps. The API returns ISO 8601 strings.",
        ["backend", "database", "api"],
    ),
    S(
        "pat-secret-rotation",
        "Rotating a secret",
        "Add the new value as a second secret version, deploy code that accepts both (e.g. SECRET_KEY_SESSIONS "
        "and SECRET_KEY_SESSIONS_PREVIOUS), switch signing to the new one, wait one session lifetime, remove the "
        "old.",
        ["security", "configuration"],
    ),
    S(
        "pat-gdpr-anonymise",
        "Anonymising personal data",
        "Anonymiser.anonymise_client(client) replaces name, email, address and tax id with placeholders, keeps "
        "amounts and dates, and records an audit event; used by erasure requests and the staging copy.",
        ["compliance", "privacy"],
    ),
    S(
        "pat-bulk-actions",
        "Bulk actions in the UI",
        "Selecting many invoices and sending or downloading them enqueues one job per action (bulk_send, "
        "bulk_zip) that reports progress in job_status; the UI polls GET /jobs/{id} every 2 s.",
        ["frontend", "jobs", "invoices"],
    ),
    S(
        "pat-api-deprecation",
        "Deprecating an API field",
        "Mark it deprecated in the schema, add a Sunset header with the date, log its use per API key, email "
        "keys that still use it 60 and 14 days before removal.",
        ["api", "process"],
    ),
]

PROGRESS = [
    # Epic: EU e-invoicing
    T("prog-einvoicing-epic", "IN_PROGRESS", "E-invoicing for Germany and France: Factur-X PDFs, XRechnung, Peppol"),
    T("prog-facturx-embed", "DONE", "Embed Factur-X XML (EN 16931 profile) in finalised PDFs", "prog-einvoicing-epic"),
    T(
        "prog-xrechnung",
        "IN_PROGRESS",
        "XRechnung UBL export for German public-sector clients with Leitweg-ID field",
        "prog-einvoicing-epic",
    ),
    T(
        "prog-peppol-client",
        "IN_PROGRESS",
        "Storecove client: send documents and poll delivery status",
        "prog-einvoicing-epic",
    ),
    T(
        "prog-peppol-ids",
        "TODO",
        "Collect Peppol participant ids on clients and validate the scheme prefix (0088, 9930)",
        "prog-einvoicing-epic",
    ),
    T(
        "prog-schematron-ci",
        "DONE",
        "Run the official schematron validation of generated XML in CI",
        "prog-einvoicing-epic",
    ),
    # Epic: SSO
    T("prog-sso-epic", "DONE", "Single sign-on: Google, Microsoft and SAML for Enterprise"),
    T("prog-oidc-google", "DONE", "Google sign-in via OIDC with verified email matching", "prog-sso-epic"),
    T("prog-oidc-microsoft", "DONE", "Microsoft Entra ID sign-in, multi-tenant app registration", "prog-sso-epic"),
    T("prog-saml", "DONE", "SAML 2.0 for Enterprise orgs with per-org metadata upload", "prog-sso-epic"),
    T("prog-scim", "TODO", "SCIM user provisioning for Enterprise customers", "prog-sso-epic"),
    # Epic: sessions rework
    T("prog-sessions-epic", "DONE", "Move browser sessions from the database table to signed cookies"),
    T(
        "prog-session-cookie-impl",
        "DONE",
        "Implement signed cookie issuance and SessionStore.rotate()",
        "prog-sessions-epic",
    ),
    T("prog-session-deny-list", "DONE", "Revocation list in Redis for logout everywhere", "prog-sessions-epic"),
    T("prog-session-table-drop", "DONE", "Drop the old user_sessions table after 30 days", "prog-sessions-epic"),
    # Epic: dunning & reminders
    T("prog-reminders-epic", "IN_PROGRESS", "Payment reminders and late fees for overdue invoices"),
    T(
        "prog-reminder-policy-ui",
        "DONE",
        "Settings page for the reminder schedule per organisation",
        "prog-reminders-epic",
    ),
    T(
        "prog-late-fees",
        "IN_PROGRESS",
        "Late fee line added automatically after 30 days, statutory interest for Germany",
        "prog-reminders-epic",
    ),
    T(
        "prog-reminder-templates",
        "TODO",
        "Friendly, firm and final reminder email templates in five languages",
        "prog-reminders-epic",
    ),
    # Epic: public API
    T("prog-api-epic", "IN_PROGRESS", "Public REST API v1 for accounting integrators"),
    T("prog-api-keys-ui", "DONE", "API key management page with scopes and last-used date", "prog-api-epic"),
    T("prog-api-docs", "IN_PROGRESS", "API reference site generated from OpenAPI with Redoc", "prog-api-epic"),
    T(
        "prog-api-webhooks-ui",
        "TODO",
        "UI to add outgoing webhook endpoints and see delivery attempts",
        "prog-api-epic",
    ),
    T("prog-api-sdk-python", "TODO", "Official Python SDK published to PyPI", "prog-api-epic"),
    # Epic: performance
    T("prog-perf-epic", "IN_PROGRESS", "Make the invoice list fast for agencies with 50k+ invoices"),
    T("prog-perf-index", "DONE", "Composite index on invoices(org_id, status, issue_date DESC)", "prog-perf-epic"),
    T(
        "prog-perf-count",
        "DONE",
        "Replace COUNT(*) on the list page with an estimated count above 10,000 rows",
        "prog-perf-epic",
    ),
    T(
        "prog-perf-virtual-list",
        "IN_PROGRESS",
        "Virtualised table rows in the invoice list with TanStack Virtual",
        "prog-perf-epic",
    ),
    T(
        "prog-perf-n-plus-one",
        "DONE",
        "Fix N+1 queries loading clients for each invoice row (selectinload)",
        "prog-perf-epic",
    ),
    # Epic: SOC 2
    T("prog-soc2-epic", "IN_PROGRESS", "SOC 2 Type II readiness"),
    T(
        "prog-soc2-access-review",
        "DONE",
        "Quarterly access review of AWS, GitHub and Stripe accounts",
        "prog-soc2-epic",
    ),
    T("prog-soc2-vendor-list", "DONE", "Sub-processor list published on the trust page", "prog-soc2-epic"),
    T(
        "prog-soc2-laptops",
        "IN_PROGRESS",
        "Disk encryption and screen lock enforced on all laptops via MDM",
        "prog-soc2-epic",
    ),
    T(
        "prog-soc2-dr-test",
        "TODO",
        "Disaster recovery exercise: restore production into a fresh account",
        "prog-soc2-epic",
    ),
    # Epic: mobile-friendly
    T("prog-mobile-epic", "TODO", "Mobile-friendly invoice creation for freelancers on the go"),
    T("prog-mobile-editor", "TODO", "Responsive invoice editor layout below 640 px", "prog-mobile-epic"),
    T("prog-mobile-receipts", "TODO", "Photograph receipts and attach them as expense lines", "prog-mobile-epic"),
    # Epic: multi-entity
    T(
        "prog-entities-epic",
        "BLOCKED",
        "Several legal entities in one organisation, each with its own numbering "
        "and bank details; blocked on the billing model decision",
    ),
    T(
        "prog-entities-schema",
        "TODO",
        "Schema: legal_entities table and entity_id on invoices and series",
        "prog-entities-epic",
    ),
    # standalone tasks
    T("prog-upgrade-sqlalchemy", "DONE", "Upgrade SQLAlchemy to 2.0.30 and remove the 1.4 compatibility flags"),
    T("prog-python-313", "TODO", "Try Python 3.13 in CI; WeasyPrint wheels were the blocker last time"),
    T("prog-pg-17", "TODO", "Plan the upgrade of RDS to PostgreSQL 17 with a blue/green RDS deployment"),
    T("prog-redis-tls", "DONE", "Enable in-transit encryption for ElastiCache and rotate the Redis AUTH token"),
    T(
        "prog-flaky-playwright",
        "IN_PROGRESS",
        "Flaky Playwright test pay_invoice.spec.ts: Stripe iframe loads "
        "slowly in CI; waiting on frame locator instead of a fixed timeout",
    ),
    T("prog-ci-speed", "DONE", "Split pytest across 4 runners with pytest-split; CI down from 14 to 6 minutes"),
    T("prog-docker-size", "DONE", "Slim the backend image from 780 MB to 310 MB (no build tools in final stage)"),
    T("prog-datev-export", "DONE", "DATEV EXTF export with consultant and client numbers"),
    T(
        "prog-xlsx-report-memory",
        "DONE",
        "XLSX export of 100k lines ran out of memory; switched openpyxl to write_only mode",
    ),
    T("prog-bank-feeds", "IN_PROGRESS", "Bank feed import via GoCardless for German and Dutch banks"),
    T("prog-bank-matching-review", "TODO", "Review screen for unmatched bank transfers with suggested invoices"),
    T("prog-quotes", "IN_PROGRESS", "Quotes (estimates) that can be accepted online and turned into invoices"),
    T("prog-quote-accept", "TODO", "Client acceptance of a quote with name, date and IP recorded", "prog-quotes"),
    T(
        "prog-quote-convert",
        "IN_PROGRESS",
        "Convert an accepted quote into a draft invoice keeping lines",
        "prog-quotes",
    ),
    T("prog-time-tracking-import", "TODO", "Import billable hours from Toggl and Harvest as invoice lines"),
    T(
        "prog-stripe-api-upgrade",
        "DONE",
        "Upgrade the Stripe API version to 2024-06-20 and fix changed payment_intent fields",
    ),
    T("prog-webhook-replay-tool", "DONE", "Admin tool to replay a stored Stripe event for an organisation"),
    T("prog-dark-mode", "TODO", "Dark theme for the app (not for documents)"),
    T("prog-onboarding-checklist", "DONE", "Onboarding checklist: logo, bank details, first client, first invoice"),
    T(
        "prog-logo-upload-svg",
        "BLOCKED",
        "Allow SVG logos; blocked until we sanitise SVG to prevent script injection in the portal",
    ),
    T("prog-credit-note-numbering", "DONE", "Separate number series for credit notes (prefix CN-)"),
    T("prog-tax-rates-2025", "DONE", "Load the 2025 VAT rate changes (Slovakia 23%, Estonia 24% from July)"),
    T("prog-oss-report", "IN_PROGRESS", "OSS quarterly report with per-country totals"),
    T("prog-portal-pay-button", "DONE", "Pay now button in the client portal with Stripe Checkout"),
    T("prog-portal-sepa", "IN_PROGRESS", "SEPA Direct Debit as a payment method in the portal"),
    T("prog-portal-download-all", "TODO", "Client portal: download all invoices of a year as a ZIP"),
    T("prog-audit-log-ui", "DONE", "Audit log page for owners with filters by user and action"),
    T("prog-rate-limit-login", "DONE", "Rate limit password reset requests per IP and per email"),
    T("prog-alerting-cleanup", "DONE", "Removed 23 noisy alerts; only SLO burn and queue age page now"),
    T("prog-queue-age-alert", "DONE", "Alert when the oldest message in the email queue is older than 5 minutes"),
    T("prog-tempo-retention", "TODO", "Reduce trace retention to 14 days to cut storage costs"),
    T("prog-loki-labels", "DONE", "Reduce Loki label cardinality: org_id moved from label to log field"),
    T("prog-terraform-modules", "IN_PROGRESS", "Move the ECS services into one reusable Terraform module"),
    T("prog-atlantis", "DONE", "Atlantis runs terraform plan on pull requests and apply after approval"),
    T("prog-ecs-arm", "DONE", "Move ECS tasks to Graviton (ARM64); 20% cheaper, PDF rendering 10% faster"),
    T("prog-cost-review", "TODO", "Monthly AWS cost review; NAT gateway traffic is the biggest surprise"),
    T("prog-gdpr-export-job", "DONE", "Background job that builds the full organisation export ZIP"),
    T(
        "prog-account-deletion",
        "DONE",
        "Account deletion with 14-day grace period and anonymisation of retained invoices",
    ),
    T("prog-i18n-dutch", "DONE", "Dutch translation of the app and documents"),
    T("prog-i18n-italian", "TODO", "Italian translation; needs a native reviewer for legal texts on invoices"),
    T(
        "prog-accessibility-audit",
        "IN_PROGRESS",
        "Fix issues from the external accessibility audit (42 findings, 12 open)",
    ),
    T("prog-invoice-duplicate", "DONE", "Duplicate an invoice as a new draft"),
    T("prog-recurring-pause", "DONE", "Pause and resume recurring schedules"),
    T("prog-expense-lines", "TODO", "Rebill expenses with their own VAT rate and a markup percentage"),
    T("prog-multi-user-editing", "TODO", "Show who else is editing a draft (presence) to avoid ETag conflicts"),
    T("prog-plan-downgrade", "DONE", "Downgrade flow warns about features that will be lost (SAML, extra seats)"),
    T("prog-annual-switch", "DONE", "Switch from monthly to annual billing with prorated credit"),
    T(
        "prog-incident-0917",
        "DONE",
        "Follow-ups of the 17 September outage: PgBouncer pool exhausted by a "
        "migration holding locks; added lock_timeout to migrations",
    ),
    T(
        "prog-incident-1102",
        "IN_PROGRESS",
        "Follow-ups of the 2 November email delay: PDF batch starved the "
        "email queue; separate worker pools done, queue-age alert pending review",
    ),
]

GLOSSARY = [
    G(
        "gl-org",
        "Organisation",
        "A customer account of Quillbill: one company or freelancer, with members, a plan "
        "and its own invoice series. Called org in code (org_id).",
    ),
    G(
        "gl-client",
        "Client",
        "Someone an organisation sends invoices to. Not a Quillbill user; reaches invoices "
        "through emailed links and the portal.",
    ),
    G(
        "gl-member",
        "Member",
        "A user who belongs to an organisation with one of the roles owner, admin, accountant or viewer.",
    ),
    G(
        "gl-series",
        "Invoice series",
        "A numbering sequence such as 2025-#### with its own counter; an "
        "organisation may have several (e.g. per country). Credit notes use their own series.",
    ),
    G(
        "gl-finalise",
        "Finalise",
        "The step that turns a draft into an issued invoice: assigns the number, fixes "
        "dates and amounts and archives the PDF. After it the invoice cannot be edited.",
    ),
    G(
        "gl-credit-note",
        "Credit note",
        "A document that cancels all or part of a finalised invoice; the only way to correct or refund one.",
    ),
    G("gl-void", "Void", "Status of an invoice cancelled in full by a credit note. It keeps its number."),
    G("gl-draft", "Draft", "An invoice being prepared. No number yet; can be edited or deleted freely."),
    G(
        "gl-minor-units",
        "Minor units",
        "The smallest unit of a currency: cents for EUR, pence for GBP, fils for "
        "KWD (1/1000). All amounts are stored in minor units.",
    ),
    G(
        "gl-reverse-charge",
        "Reverse charge",
        "EU B2B rule where the buyer accounts for VAT; the invoice shows 0% "
        "VAT and a legal note. Applied when seller and client are in different member states and the client has "
        "a valid VAT number.",
    ),
    G(
        "gl-oss",
        "OSS",
        "One-Stop-Shop: EU scheme for declaring VAT on B2C sales to other member states in one quarterly return.",
    ),
    G(
        "gl-vies",
        "VIES",
        "The EU service that validates VAT numbers; we check client VAT numbers against it "
        "before applying reverse charge and store the consultation number.",
    ),
    G(
        "gl-facturx",
        "Factur-X",
        "Franco-German hybrid e-invoice: a PDF/A-3 with embedded CII XML. ZUGFeRD 2.x is "
        "the same format under its German name.",
    ),
    G(
        "gl-xrechnung",
        "XRechnung",
        "German e-invoice standard for public authorities; pure XML (UBL or CII) and "
        "needs the Leitweg-ID of the buyer.",
    ),
    G(
        "gl-peppol",
        "Peppol",
        "Network for exchanging e-invoices between access points; participants are "
        "identified by scheme and id, e.g. 0088:4035811991014.",
    ),
    G("gl-leitweg", "Leitweg-ID", "Routing identifier of a German public authority, required on XRechnung invoices."),
    G(
        "gl-dunning",
        "Dunning",
        "Chasing unpaid subscription payments of our own customers (Stripe Smart Retries "
        "plus our reminder emails). Not to be confused with reminders to clients.",
    ),
    G(
        "gl-reminder",
        "Reminder",
        "Email to a client about an overdue invoice, sent on the organisation's reminder schedule.",
    ),
    G("gl-seat", "Seat", "A paid member slot on the Team plan; viewers do not take a seat."),
    G("gl-plan", "Plan", "Starter, Team or Enterprise; limits and features in plans.yaml."),
    G(
        "gl-quota",
        "Quota",
        "The number of finalised invoices a plan includes per month; exceeding it shows a warning only.",
    ),
    G(
        "gl-portal",
        "Client portal",
        "The pages a client sees: their invoices from one organisation, payment, downloads. Separate cookie qb_portal.",
    ),
    G(
        "gl-magic-link",
        "Access link",
        "The link in an invoice email that opens it in the portal without an "
        "account; a random token stored hashed, valid 90 days.",
    ),
    G(
        "gl-connect",
        "Connected account",
        "An organisation's Stripe Express account through which its clients pay "
        "it. Money never passes through Quillbill.",
    ),
    G("gl-payout", "Payout", "Stripe's transfer from a connected account to the organisation's bank."),
    G(
        "gl-outbox",
        "Outbox",
        "Table of domain events written with the change that caused them, relayed to queues and webhooks after commit.",
    ),
    G(
        "gl-uow",
        "Unit of work",
        "One database transaction around a request or job, with after-commit callbacks (get_uow, UnitOfWork).",
    ),
    G("gl-tenant", "Tenant", "Same as organisation in database terms; isolation by org_id and row-level security."),
    G("gl-rls", "RLS", "PostgreSQL row-level security: policies that filter every query by app.org_id."),
    G("gl-actor", "Actor", "A Dramatiq background job function, declared with @dramatiq.actor."),
    G(
        "gl-expand-contract",
        "Expand and contract",
        "Migration style where a schema change is split into an "
        "additive release and a later removal, so old and new code run side by side.",
    ),
    G("gl-release-train", "Release train", "The daily 10:00 CET release from main."),
    G(
        "gl-slo",
        "SLO",
        "Service level objective; ours are 99.9% availability and p95 under 400 ms for the invoice API.",
    ),
    G(
        "gl-burn-rate",
        "Burn rate",
        "How fast the error budget of an SLO is being used; alerts page at 14.4x over 1 hour and 6x over 6 hours.",
    ),
    G(
        "gl-step-up",
        "Step-up authentication",
        "Asking a signed-in user for their password or TOTP code again "
        "before a sensitive change such as payout bank details.",
    ),
    G("gl-recovery-codes", "Recovery codes", "Ten single-use codes that replace the TOTP code when the phone is lost."),
    G("gl-aged-receivables", "Aged receivables", "Report of unpaid invoices grouped by how long they are overdue."),
    G("gl-datev", "DATEV", "German accounting software standard; we export bookings in its EXTF CSV format."),
    G("gl-retainer", "Retainer", "A recurring invoice for a fixed monthly fee, usually from a recurring schedule."),
    G(
        "gl-late-fee",
        "Late fee",
        "A fixed charge or interest added to an overdue invoice; in Germany 40 EUR plus "
        "interest of 9 points above the base rate for B2B.",
    ),
    G(
        "gl-etag",
        "ETag",
        "Version tag of a draft returned by the API; writes send If-Match so that concurrent "
        "edits are detected (HTTP 412).",
    ),
    G("gl-golden-file", "Golden file", "A stored expected output (text of a rendered PDF) that tests compare against."),
    G("gl-test-clock", "Test clock", "Stripe feature that simulates time for a test subscription."),
    G(
        "gl-idempotency-key",
        "Idempotency key",
        "A client-chosen key on POST requests so that a retried request does not create a second object.",
    ),
    G(
        "gl-problem-details",
        "Problem details",
        "RFC 9457 JSON error body with type, title, status, detail and our code.",
    ),
]

OTHER_DATA = [
    C(
        "cfg-env-vars",
        "Configuration",
        "environment_variables",
        {
            "DATABASE_URL": "primary Postgres through PgBouncer",
            "DATABASE_REPLICA_URL": "read replica for reports",
            "PG_POOL_SIZE": "SQLAlchemy pool size per process (10 web, 4 workers)",
            "REDIS_URL": "ElastiCache primary",
            "SECRET_KEY_SESSIONS": "signs session cookies",
            "STRIPE_API_KEY": "platform secret key",
            "STRIPE_WEBHOOK_SECRET": "verifies /webhooks/stripe",
            "POSTMARK_TOKEN": "server token",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "collector sidecar",
            "UNLEASH_URL": "feature flag server",
        },
    ),
    C(
        "cfg-queues",
        "Configuration",
        "dramatiq_queues",
        {
            "default": "2 workers x 8 threads",
            "pdf": "4 processes, 2 GiB each",
            "email": "2 workers, 4 threads",
            "webhooks": "2 workers, 8 threads",
        },
    ),
    C(
        "cfg-ports",
        "Configuration",
        "local_development_ports",
        {"api": 8000, "web (vite)": 5173, "postgres": 5432, "redis": 6379, "mailpit": 8025},
    ),
    C(
        "run-db-failover",
        "Runbooks",
        "database_failover",
        "Symptoms: API 5xx with 'connection refused' to PgBouncer. RDS Multi-AZ fails over by itself in 60-120 s; "
        "check the RDS events page, then restart the PgBouncer sidecars (ecs update-service --force-new-deployment) "
        "if they keep stale DNS.",
    ),
    C(
        "run-stripe-webhooks-failing",
        "Runbooks",
        "stripe_webhooks_failing",
        "Check the Stripe dashboard webhook attempts; 400s mean a wrong STRIPE_WEBHOOK_SECRET after rotation. Fix the "
        "secret, then replay failed events with the admin tool replay_stripe_event.",
    ),
    C(
        "run-email-queue-backlog",
        "Runbooks",
        "email_queue_backlog",
        "If the oldest email message is over 5 minutes: check worker-email task count and the Postmark status page; "
        "scale with ecs update-service --desired-count 4; never purge the queue.",
    ),
    C(
        "run-pdf-worker-oom",
        "Runbooks",
        "pdf_worker_out_of_memory",
        "Large invoices with thousands of lines can exceed 2 GiB in WeasyPrint. Find the invoice id in the logs "
        "(event pdf.render.started without finished), render it alone with scripts/render_one.py --invoice ID.",
    ),
    C(
        "run-restore-backup",
        "Runbooks",
        "restore_database_from_backup",
        "Point-in-time restore into a new RDS instance from the console or terraform workspace restore; verify row "
        "counts of invoices and payments against the last metrics; switch DATABASE_URL in Secrets Manager.",
    ),
    C(
        "team-owners",
        "Team",
        "area_owners",
        {
            "billing and payments": "Marta",
            "invoices and PDFs": "Jonas",
            "frontend": "Aiko",
            "infrastructure": "Sam",
            "e-invoicing": "Jonas",
            "security and compliance": "Priya",
        },
    ),
    C(
        "team-meetings",
        "Team",
        "rituals",
        "Standup 9:30 CET; engineering meeting Thursday 15:00 with incident reviews; planning every second Monday.",
    ),
    C(
        "vendor-list",
        "Vendors",
        "sub_processors",
        [
            "AWS (eu-central-1)",
            "Stripe",
            "Postmark",
            "Sentry (EU)",
            "Grafana Cloud (EU)",
            "Storecove",
            "GoCardless Bank Account Data",
            "Cloudflare",
        ],
    ),
    C(
        "limits-plans",
        "Plans",
        "limits",
        {
            "Starter": {"seats": 1, "invoices_per_month": 30, "sso": False},
            "Team": {"seats": "per seat", "invoices_per_month": 500, "sso": "Google/Microsoft"},
            "Enterprise": {"seats": "per seat", "invoices_per_month": "unlimited", "sso": "SAML"},
        },
    ),
    C(
        "known-issue-safari-pdf",
        "Known issues",
        "safari_pdf_preview",
        "Safari on iOS 16 shows only the first page of the PDF preview in the portal; workaround: download link "
        "below the preview.",
    ),
    C(
        "known-issue-outlook-links",
        "Known issues",
        "outlook_safe_links",
        "Microsoft Safe Links pre-opens access links; the GET must not consume the token, only the pay action does.",
    ),
    C(
        "known-issue-weasyprint-fonts",
        "Known issues",
        "missing_cjk_fonts",
        "Client names in Chinese or Japanese rendered as boxes; Noto CJK fonts added to the image (adds 60 MB).",
    ),
]
