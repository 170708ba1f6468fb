"""Decisions of the Quillbill project (a SaaS invoicing app), as its team recorded them."""

from __future__ import annotations

from typing import Any


def D(key: str, summary: str, rationale: str, details: str | None, tags: list[str]) -> dict[str, Any]:
    item: dict[str, Any] = {"id": key, "type": "decision", "summary": summary, "rationale": rationale, "tags": tags}
    if details:
        item["implementation_details"] = details
    return item


DECISIONS = [
    # --- auth -------------------------------------------------------------------------------------
    D(
        "dec-signed-cookies",
        "Use signed cookies for browser sessions",
        "Server-side session rows cost a Postgres read on every request and the table grew to 40 GB in the "
        "pilot; a signed cookie carries the session id and expiry and needs no lookup until it is rotated.",
        "itsdangerous TimestampSigner with SECRET_KEY_SESSIONS; cookie name qb_sid, HttpOnly, Secure, SameSite=Lax. "
        "SessionStore.rotate() reissues it every 12 hours.",
        ["auth", "sessions"],
    ),
    D(
        "dec-argon2",
        "Hash passwords with Argon2id",
        "bcrypt truncates at 72 bytes and passphrases pasted from managers were longer; Argon2id is the OWASP "
        "recommendation.",
        "argon2-cffi PasswordHasher(time_cost=3, memory_cost=65536); old bcrypt hashes are rehashed at the next "
        "successful login in auth/passwords.py.",
        ["auth", "security"],
    ),
    D(
        "dec-totp-2fa",
        "Offer TOTP two-factor authentication, not SMS codes",
        "SMS delivery to customers in Nigeria and India failed a third of the time and SIM swapping is a known "
        "attack on finance accounts.",
        "pyotp, 30 s window, one step of drift allowed; ten single-use recovery codes hashed like passwords.",
        ["auth", "security"],
    ),
    D(
        "dec-google-oidc",
        "Support Google and Microsoft sign-in through OpenID Connect",
        "Agencies asked for it in 14 of the last 30 sales calls; both providers speak standard OIDC so one client "
        "covers them.",
        "Authlib OAuth client, auth/oidc.py; accounts are matched by verified email only, never by name.",
        ["auth"],
    ),
    D(
        "dec-saml-enterprise-only",
        "SAML single sign-on only on the Enterprise plan",
        "SAML support costs us a support ticket per customer setup; tying it to Enterprise pays for that time.",
        "python3-saml behind the feature flag sso_saml; metadata XML stored per organisation in org_sso_config.",
        ["auth", "billing", "plans"],
    ),
    D(
        "dec-magic-links-clients",
        "Clients of our customers open invoices with magic links, no account",
        "Invoice recipients are not Quillbill users; asking them to register cut online payment rates by half in "
        "the pilot.",
        "Each emailed invoice link carries a 32-byte token from secrets.token_urlsafe, stored hashed in "
        "invoice_access_tokens, valid 90 days.",
        ["auth", "invoices", "portal"],
    ),
    D(
        "dec-api-keys-hashed",
        "Store API keys only as SHA-256 hashes with a visible prefix",
        "A leaked database dump must not hand out working keys; the prefix lets support identify a key a customer "
        "pastes.",
        "Format qb_live_<8 char prefix>_<32 chars>; table api_keys(prefix, sha256, org_id, scopes, last_used_at).",
        ["api", "security", "auth"],
    ),
    D(
        "dec-lockout",
        "Lock a login after 10 failed attempts for 15 minutes",
        "Credential stuffing from a botnet in May hit 2,000 accounts; per-IP limits alone did not stop it because "
        "the IPs rotated.",
        "Counter in Redis key login_fail:{email_hash} with TTL 900; LoginThrottle.check() runs before password "
        "verification.",
        ["auth", "security", "redis"],
    ),
    D(
        "dec-jwt-rejected",
        "No JWTs for the web app",
        "A JWT cannot be revoked before it expires without a deny list, which is a session store again; logout "
        "had to take effect at once for shared office computers.",
        None,
        ["auth", "sessions"],
    ),
    D(
        "dec-roles",
        "Four fixed roles per organisation: owner, admin, accountant, viewer",
        "Custom roles were requested by two customers only; four roles cover every workflow we observed and keep "
        "the permission checks readable.",
        "Role enum in app/auth/roles.py; require_role(Role.ACCOUNTANT) dependency on FastAPI routes.",
        ["auth", "permissions"],
    ),
    # --- sessions ---------------------------------------------------------------------------------
    D(
        "dec-session-idle-timeout",
        "Sessions end after 8 hours idle and 30 days absolute",
        "Accountants work in long stretches but leave machines unlocked in shared offices; the auditors of our "
        "SOC 2 report accepted 8 hours.",
        "Both limits are checked in SessionMiddleware; idle time is the issued_at in the signed cookie, refreshed "
        "by rotation.",
        ["sessions", "security", "compliance"],
    ),
    D(
        "dec-session-revocation-list",
        "Revoked sessions are kept in a Redis set until they would expire",
        "Signed cookies cannot be recalled, so logout everywhere and password changes add the session id to a "
        "deny list.",
        "Redis SET revoked_sessions with per-member expiry emulated by a sorted set scored by expiry time; "
        "pruned by the cron job prune_revoked every hour.",
        ["sessions", "redis", "auth"],
    ),
    D(
        "dec-csrf-double-submit",
        "CSRF protection with the double-submit cookie",
        "SameSite=Lax covers most cases but the client portal is embedded in customers' sites through an iframe "
        "for some plans.",
        "Cookie qb_csrf plus X-CSRF-Token header compared in CsrfMiddleware; the React app reads the cookie in "
        "api/client.ts.",
        ["security", "sessions", "frontend"],
    ),
    # --- billing (our own subscriptions) ----------------------------------------------------------
    D(
        "dec-stripe-billing",
        "Stripe Billing runs our subscriptions",
        "Building proration, trials and dunning ourselves was estimated at three months; Stripe Billing does all "
        "three and our customers already trust the checkout page.",
        "Products and prices are created by scripts/stripe_sync.py from plans.yaml; never edit them in the dashboard.",
        ["billing", "stripe"],
    ),
    D(
        "dec-plans-three-tiers",
        "Three plans: Starter, Team and Enterprise",
        "Five tiers in the beta confused buyers; the pricing page test with three tiers converted 22% better.",
        "plans.yaml is the source of truth: seats, invoice quota, features. PlanLimits.for_org(org) reads it.",
        ["billing", "plans"],
    ),
    D(
        "dec-seat-billing",
        "Charge Team plans per seat, counted at the billing date",
        "Counting seats continuously made invoices change every day when agencies added freelancers for a week.",
        "The job sync_seat_quantities runs daily at 02:00 UTC and updates subscription item quantity with "
        "proration_behavior='none'.",
        ["billing", "plans"],
    ),
    D(
        "dec-annual-discount",
        "Annual plans cost ten months",
        "Churn on annual plans is a quarter of monthly churn; two months free is what competitors offer.",
        None,
        ["billing", "pricing"],
    ),
    D(
        "dec-trial-no-card",
        "14-day trial without a credit card",
        "Asking for a card up front cut sign-ups by 60% in an experiment in March; trial-to-paid fell only from "
        "18% to 15% without it.",
        "Organisation.trial_ends_at; the banner TrialCountdown shows from day 10; on expiry the org becomes "
        "read-only, never deleted.",
        ["billing", "growth"],
    ),
    D(
        "dec-dunning-stripe-smart-retries",
        "Use Stripe Smart Retries for failed subscription payments",
        "Our own retry schedule recovered 31% of failed payments, Smart Retries 44% in the A/B test.",
        "After the last retry the webhook customer.subscription.updated with status unpaid moves the org to "
        "read-only; billing/dunning.py sends our own reminder emails on days 1, 4 and 9.",
        ["billing", "stripe"],
    ),
    D(
        "dec-usage-quota-soft",
        "Invoice quotas are soft limits with a warning, not a hard stop",
        "Blocking an invoice at month end would block our customer's income; a hard stop was the top complaint "
        "of the beta.",
        "QuotaGuard.check() logs quota_exceeded and shows a banner; sales follows up from the weekly report.",
        ["billing", "plans"],
    ),
    D(
        "dec-tax-ids-on-our-invoices",
        "Our own invoices show the customer's VAT number and use reverse charge in the EU",
        "EU B2B customers cannot reclaim VAT otherwise and asked for corrected invoices every month.",
        "Stripe Tax with customer tax_ids collected at checkout; tax_behavior exclusive.",
        ["billing", "tax", "stripe"],
    ),
    # --- invoices domain --------------------------------------------------------------------------
    D(
        "dec-invoice-numbering",
        "Invoice numbers are gapless per organisation and series",
        "Tax law in Germany, France and Italy requires consecutive numbering; a gap needs an explanation to the "
        "tax office.",
        "InvoiceNumberAllocator takes SELECT ... FOR UPDATE on invoice_series row; numbers are assigned at "
        "finalisation, not at draft creation.",
        ["invoices", "compliance", "database"],
    ),
    D(
        "dec-money-minor-units",
        "Store amounts as integers in minor units with a currency code",
        "Floats produced a one-cent difference between line totals and the invoice total in the prototype.",
        "Money dataclass (amount_minor: int, currency: str) in app/money.py; currencies with three decimals "
        "(KWD, BHD) use 1000 minor units via CURRENCY_EXPONENTS.",
        ["invoices", "money"],
    ),
    D(
        "dec-rounding-per-line",
        "Round tax per line, then sum",
        "Our accountant advisors said most EU tax offices expect per-line rounding; summing then rounding "
        "disagreed with customers' ERP exports.",
        "TaxCalculator.line_tax() rounds half-up with decimal.ROUND_HALF_UP; the invoice total is the sum of "
        "rounded lines.",
        ["invoices", "tax", "money"],
    ),
    D(
        "dec-finalised-immutable",
        "A finalised invoice is never edited; corrections are credit notes",
        "Editing a sent invoice is illegal in most of our markets and broke the audit trail.",
        "InvoiceStatus.FINALISED rows are rejected by the ORM event before_update; CreditNote references "
        "original_invoice_id.",
        ["invoices", "compliance"],
    ),
    D(
        "dec-pdf-weasyprint",
        "Render invoice PDFs with WeasyPrint from HTML templates",
        "Designers edit HTML and CSS, not ReportLab code; WeasyPrint handles page breaks in long line tables.",
        "templates/invoice/*.html with Jinja2; rendering runs in the pdf worker queue because one PDF takes "
        "300-900 ms.",
        ["invoices", "pdf"],
    ),
    D(
        "dec-pdf-archive-s3",
        "Store every issued PDF in S3 with Object Lock for ten years",
        "Retention law requires the exact document as sent; re-rendering later could differ after a template change.",
        "Bucket qb-invoice-archive, compliance mode retention 10 years; key org/{org_id}/{year}/{number}.pdf.",
        ["invoices", "compliance", "storage"],
    ),
    D(
        "dec-multi-currency",
        "Each invoice has one currency; conversions only in reports",
        "Mixed-currency invoices are not allowed in most jurisdictions and confused clients.",
        "Reports convert with the ECB daily rate of the issue date stored in fx_rates.",
        ["invoices", "money", "reports"],
    ),
    D(
        "dec-fx-ecb",
        "Exchange rates from the European Central Bank reference feed",
        "Free, published daily, accepted by EU tax offices; commercial feeds cost 400 EUR a month for data we "
        "need once a day.",
        "Job fetch_ecb_rates at 16:30 CET; weekends and holidays reuse the last business day.",
        ["money", "reports", "jobs"],
    ),
    D(
        "dec-einvoicing-zugferd",
        "Attach Factur-X / ZUGFeRD XML to PDFs for German and French customers",
        "B2B e-invoicing becomes mandatory in Germany from 2025 and France from 2026; the hybrid format keeps "
        "the PDF readable.",
        "factur-x library embeds the CII XML at profile EN 16931; validated against the official schematron in CI.",
        ["invoices", "compliance", "einvoicing"],
    ),
    D(
        "dec-peppol-via-partner",
        "Send Peppol e-invoices through a certified access point partner",
        "Becoming a Peppol access point ourselves needs certification and a 24/7 operation we cannot staff.",
        "Storecove API client in integrations/peppol.py; delivery status polled by the job peppol_status.",
        ["invoices", "einvoicing", "integrations"],
    ),
    D(
        "dec-recurring-invoices",
        "Recurring invoices are generated from schedules, each a normal draft",
        "Customers want to review retainers before they go out; auto-sending surprised them in the beta.",
        "RecurringSchedule with an RRULE string; the job materialise_recurring creates drafts 3 days ahead; "
        "auto_send is opt-in per schedule.",
        ["invoices", "jobs"],
    ),
    D(
        "dec-due-date-terms",
        "Payment terms stored as days, due date computed at finalisation",
        "Storing a due date on drafts went stale when drafts sat for weeks.",
        None,
        ["invoices"],
    ),
    D(
        "dec-late-reminders",
        "Automatic payment reminders at 3, 10 and 30 days overdue, editable per org",
        "Chasing late payers is the feature customers mention most in reviews.",
        "ReminderPolicy per organisation; the job send_overdue_reminders runs hourly and is idempotent by "
        "(invoice_id, step).",
        ["invoices", "email", "jobs"],
    ),
    D(
        "dec-client-portal",
        "Invoice recipients get a read-only portal with all their invoices from one sender",
        "Recipients asked for past invoices by email; the portal removed about 30 support emails a week for "
        "bigger customers.",
        "portal/ routes in the same FastAPI app, separate cookie qb_portal; rendered server-side with Jinja2.",
        ["portal", "invoices"],
    ),
    # --- payments ----------------------------------------------------------------------------------
    D(
        "dec-stripe-connect",
        "Customers get paid through Stripe Connect Express accounts",
        "We must never hold customers' money; Connect makes Stripe the merchant of record for each customer.",
        "Account links created in payments/connect.py; destination charges are not used, direct charges are.",
        ["payments", "stripe"],
    ),
    D(
        "dec-webhook-idempotency",
        "Webhook events are processed once, keyed by event id",
        "Stripe delivers at least once; a duplicate invoice.paid marked an invoice paid twice and sent two receipts.",
        "Table processed_webhook_events(event_id primary key); the handler inserts first and skips on "
        "IntegrityError, all in one transaction.",
        ["payments", "webhooks", "database"],
    ),
    D(
        "dec-webhooks-queue",
        "Webhook requests are acknowledged at once and processed on a queue",
        "Stripe times out after 10 s and our PDF receipt generation sometimes took longer, causing retries.",
        "POST /webhooks/stripe verifies the signature and enqueues handle_stripe_event; returns 200 in under 50 ms.",
        ["payments", "webhooks", "jobs"],
    ),
    D(
        "dec-partial-payments",
        "Invoices can be partially paid; balance is derived from payments",
        "Large agency invoices are often paid in two instalments.",
        "invoice.amount_due_minor = total_minor - sum(payments.amount_minor); status PARTIALLY_PAID.",
        ["payments", "invoices"],
    ),
    D(
        "dec-bank-transfer-matching",
        "Match incoming bank transfers by the invoice number in the reference",
        "Most B2B invoices in Europe are paid by transfer; fuzzy matching on amounts produced wrong matches.",
        "Bank feeds through GoCardless Bank Account Data; BankMatcher.match() looks for the number with a regex "
        "per series prefix; unmatched transfers go to a review queue.",
        ["payments", "integrations"],
    ),
    D(
        "dec-no-card-storage",
        "We never see or store card numbers",
        "Keeps us at PCI SAQ A; Stripe Elements collects cards inside their iframe.",
        None,
        ["payments", "security", "compliance"],
    ),
    D(
        "dec-refunds-through-credit-notes",
        "A refund always creates a credit note",
        "Accounting exports need a document for every money movement back to a client.",
        "RefundService.refund(payment, amount) creates the Stripe refund and the CreditNote in one unit of work.",
        ["payments", "invoices"],
    ),
    # --- database ----------------------------------------------------------------------------------
    D(
        "dec-postgres",
        "PostgreSQL 16 is the only database",
        "Row-level security, JSONB for template settings and SELECT FOR UPDATE for numbering; the team runs it "
        "well already.",
        "Amazon RDS, db.r6g.xlarge, Multi-AZ.",
        ["database", "infrastructure"],
    ),
    D(
        "dec-rls-tenancy",
        "Tenant isolation with Postgres row-level security on org_id",
        "A missing WHERE org_id in one query leaked a customer list in another product we know of; RLS makes the "
        "database refuse it.",
        "Every tenant table has POLICY tenant_isolation USING (org_id = current_setting('app.org_id')::uuid); "
        "TenantSession sets app.org_id with SET LOCAL at transaction start.",
        ["database", "security", "tenancy"],
    ),
    D(
        "dec-pgbouncer",
        "PgBouncer in transaction mode in front of Postgres",
        "Each API pod opened 20 connections and 30 pods exhausted max_connections=500 during a deploy.",
        "PgBouncer sidecar, default_pool_size 40; SET LOCAL works in transaction mode, prepared statements are "
        "off in asyncpg (statement_cache_size=0).",
        ["database", "infrastructure"],
    ),
    D(
        "dec-pg-pool-size",
        "PG_POOL_SIZE is 10 per API process, overflow 5",
        "Measured: above 10 the p95 did not improve and PgBouncer queues grew.",
        "Set in settings.py from the environment; workers use PG_POOL_SIZE=4.",
        ["database", "configuration"],
    ),
    D(
        "dec-alembic",
        "Schema changes through Alembic migrations, reviewed like code",
        "Hand-run SQL on staging drifted from production twice.",
        "migrations/versions/; one migration per pull request; autogenerate is a starting point, always edited.",
        ["database", "migrations"],
    ),
    D(
        "dec-expand-contract",
        "Migrations follow expand and contract; no destructive change in the same release",
        "Old pods keep running during a rolling deploy and crashed on a dropped column in release 1.14.",
        "A column is added nullable, backfilled by a job, then made NOT NULL and the old one dropped in a later "
        "release.",
        ["database", "migrations", "deployment"],
    ),
    D(
        "dec-uuid-v7",
        "Primary keys are UUIDv7",
        "Random UUIDv4 keys fragmented the invoice index; v7 is time-ordered and still not guessable enough "
        "to enumerate.",
        "uuid_utils.uuid7() default in the base model; invoice numbers stay separate human-readable strings.",
        ["database"],
    ),
    D(
        "dec-soft-delete-clients",
        "Clients are archived, never deleted, while invoices reference them",
        "Deleting a client broke issued invoices that must remain intact for ten years.",
        "clients.archived_at; ClientRepository.active() filters it; GDPR erasure anonymises the name and address "
        "instead.",
        ["database", "compliance"],
    ),
    D(
        "dec-read-replica-reports",
        "Reports read from a replica",
        "Year-end reports scanned millions of invoice lines and slowed checkout pages for everyone.",
        "DATABASE_REPLICA_URL; the reports router uses ReplicaSession; replication lag above 30 s shows a notice.",
        ["database", "reports"],
    ),
    D(
        "dec-statement-timeout",
        "statement_timeout 5 s for web requests, 10 minutes for jobs",
        "A runaway report query held locks and queued every invoice write for four minutes.",
        "SET statement_timeout in the connection's init hook, chosen by the process role (web or worker).",
        ["database", "reliability"],
    ),
    D(
        "dec-backups-pitr",
        "Point-in-time recovery with 35 days of RDS backups plus a nightly logical dump",
        "RDS snapshots alone cannot be restored into another account after an account compromise.",
        "pg_dump nightly to a bucket in the separate backup account with write-only credentials.",
        ["database", "backups", "security"],
    ),
    # --- caching ----------------------------------------------------------------------------------
    D(
        "dec-redis-cache",
        "Redis 7 on ElastiCache for caching, rate limits and queues",
        "One store for three needs keeps operations simple at our size.",
        "Separate logical databases: 0 cache, 1 rate limits, 2 Dramatiq broker.",
        ["caching", "redis", "infrastructure"],
    ),
    D(
        "dec-cache-dashboard-totals",
        "Cache dashboard totals for 60 seconds per organisation",
        "The dashboard query sums every open invoice and took 800 ms for agencies with 50,000 invoices.",
        "cache key dash:v3:{org_id}; invalidated on invoice finalise and payment events via "
        "DashboardCache.bust(org_id).",
        ["caching", "dashboard", "performance"],
    ),
    D(
        "dec-no-cache-invoice-pages",
        "Invoice pages are never cached",
        "Status and balance must be exact; a cached page showed an unpaid invoice after payment and the client "
        "paid twice.",
        None,
        ["caching", "invoices"],
    ),
    D(
        "dec-cache-versioned-keys",
        "Cache keys carry a schema version prefix",
        "After a deploy old pods and new pods read each other's cached shapes and crashed on a missing field.",
        "Prefix like dash:v3; bump the version when the cached structure changes.",
        ["caching", "deployment"],
    ),
    D(
        "dec-http-caching-assets",
        "Static assets are served from CloudFront with immutable hashed names",
        "The API pods served 40% of their requests as static files before.",
        "Vite build with content hashes, Cache-Control: public, max-age=31536000, immutable; index.html no-cache.",
        ["caching", "frontend", "infrastructure"],
    ),
    # --- background jobs --------------------------------------------------------------------------
    D(
        "dec-dramatiq",
        "Background jobs run on Dramatiq with Redis",
        "Celery's configuration surface caused two outages (prefetch and visibility timeout); Dramatiq's defaults "
        "are safe and it retries with backoff.",
        "Actors in app/jobs/; queues default, pdf, email, webhooks; worker deployment per queue.",
        ["jobs", "redis"],
    ),
    D(
        "dec-jobs-idempotent",
        "Every job must be safe to run twice",
        "Workers are killed during deploys and Dramatiq redelivers unacknowledged messages.",
        "Jobs take ids, not objects, reload state and check it before acting.",
        ["jobs", "reliability"],
    ),
    D(
        "dec-cron-scheduler",
        "Periodic jobs are scheduled by one APScheduler process with a Redis lock",
        "Two scheduler replicas sent every reminder twice for a day.",
        "scheduler deployment with replicas: 1 and a lock key scheduler:leader renewed every 10 s.",
        ["jobs", "reliability"],
    ),
    D(
        "dec-pdf-queue-separate",
        "PDF rendering has its own queue and workers",
        "A batch of 5,000 year-end PDFs delayed password reset emails by 40 minutes.",
        "Queue pdf with 4 worker processes and 2 GiB memory limit per pod.",
        ["jobs", "pdf", "email"],
    ),
    D(
        "dec-job-timeouts",
        "Jobs have a time limit of 5 minutes unless declared otherwise",
        "A stuck Peppol call held a worker thread for a whole weekend.",
        "Dramatiq TimeLimit middleware; long jobs set time_limit explicitly in the actor decorator.",
        ["jobs", "reliability"],
    ),
    # --- email ------------------------------------------------------------------------------------
    D(
        "dec-postmark",
        "Transactional email through Postmark",
        "Deliverability tests put Postmark first for invoice emails; SES landed in spam for Outlook recipients.",
        "Two message streams: outbound (invoices, reminders) and auth (password reset, verification).",
        ["email", "integrations"],
    ),
    D(
        "dec-custom-sending-domains",
        "Customers can send invoices from their own domain",
        "Invoices from a no-reply address of ours looked like phishing to recipients.",
        "Postmark sender signatures with DKIM records shown in Settings > Email; unverified domains fall back to "
        "invoices@quillbill.app with Reply-To set.",
        ["email", "deliverability"],
    ),
    D(
        "dec-email-templates-mjml",
        "Email templates in MJML compiled at build time",
        "Hand-written table HTML broke in Outlook 2016 which a quarter of recipients use.",
        "emails/*.mjml compiled by npm run build:emails into templates/email/*.html.",
        ["email", "frontend"],
    ),
    D(
        "dec-bounce-handling",
        "Hard bounces mark the client's email as undeliverable",
        "Reminders kept going to dead addresses and hurt our sender reputation.",
        "Postmark bounce webhook sets clients.email_status = 'bounced' and shows a warning on the client page.",
        ["email", "webhooks"],
    ),
    # --- frontend ---------------------------------------------------------------------------------
    D(
        "dec-react-vite",
        "React 18 with TypeScript and Vite for the web app",
        "The team knows React; Vite's dev server started in 300 ms against 25 s for the old webpack setup.",
        "web/ directory; strict TypeScript; path alias @/ to web/src.",
        ["frontend"],
    ),
    D(
        "dec-tanstack-query",
        "Server state with TanStack Query, no Redux",
        "Almost all client state was cached server data; Redux boilerplate doubled the size of each feature.",
        "Query keys built by queryKeys.invoices.detail(id) in web/src/api/keys.ts; staleTime 30 s by default.",
        ["frontend"],
    ),
    D(
        "dec-openapi-client",
        "The TypeScript API client is generated from the OpenAPI schema",
        "Hand-written types drifted from the backend and caused a production bug with amounts as strings.",
        "openapi-typescript in npm run gen:api; CI fails when the generated file differs from the committed one.",
        ["frontend", "api", "ci"],
    ),
    D(
        "dec-tailwind",
        "Tailwind CSS with a small component library of our own",
        "We tried MUI; overriding its styles for the invoice editor was more work than building the components.",
        "web/src/ui/ holds Button, Dialog, Table, MoneyInput; design tokens in tailwind.config.ts.",
        ["frontend", "design"],
    ),
    D(
        "dec-money-input",
        "Amount fields accept locale formats and store minor units",
        "German users type 1.234,56 and got 1.23456 in the first version.",
        "MoneyInput parses with Intl.NumberFormat parts for the user's locale and emits amount_minor.",
        ["frontend", "money", "i18n"],
    ),
    D(
        "dec-i18n",
        "Interface translations with i18next, languages en, de, fr, es, nl",
        "Eighty percent of paying customers are outside English-speaking countries.",
        "Keys in web/src/locales/{lang}.json; invoice documents are translated separately per client language.",
        ["frontend", "i18n"],
    ),
    D(
        "dec-invoice-editor-autosave",
        "The invoice editor saves drafts automatically every 2 seconds of inactivity",
        "Users lost long drafts when their laptop slept; a save button was forgotten.",
        "Debounced PATCH /invoices/{id} with If-Match ETag; a 412 shows the conflict dialog.",
        ["frontend", "invoices"],
    ),
    D(
        "dec-feature-flags",
        "Feature flags with Unleash, evaluated server side",
        "Client-side flags leaked unreleased feature names in the bundle.",
        "UNLEASH_URL; the API returns enabled flags for the session in GET /me; flags removed within two releases "
        "of full rollout.",
        ["frontend", "release"],
    ),
    D(
        "dec-accessibility",
        "WCAG 2.1 AA for the app and the client portal",
        "Public-sector clients of our customers require it, and screen reader users could not pay invoices.",
        "axe-core checks in Playwright tests; focus management rules in web/src/ui/Dialog.tsx.",
        ["frontend", "accessibility"],
    ),
    # --- API --------------------------------------------------------------------------------------
    D(
        "dec-fastapi",
        "Backend in Python 3.12 with FastAPI and SQLAlchemy 2",
        "Typed request models and async I/O for Stripe and Postmark calls; the team writes Python.",
        "app/ package; routers per domain under app/api/; SQLAlchemy async sessions with asyncpg.",
        ["backend", "api"],
    ),
    D(
        "dec-public-api-v1",
        "A public REST API versioned in the path, /api/v1",
        "Accounting integrators asked for a stable contract; header versioning confused their HTTP tools.",
        "Breaking changes only in /api/v2; additive changes are allowed in v1 and listed in the changelog.",
        ["api"],
    ),
    D(
        "dec-cursor-pagination",
        "List endpoints use cursor pagination",
        "Offset pagination skipped invoices when new ones were created while an integrator paged through.",
        "Opaque cursor = base64 of (created_at, id); limit at most 200; next_cursor null at the end.",
        ["api", "database"],
    ),
    D(
        "dec-api-rate-limits",
        "API rate limit of 120 requests per minute per key",
        "One integrator's sync loop sent 3,000 requests per minute and slowed the app for everyone.",
        "Sliding window in Redis db 1 via RateLimiter.hit(key_id); 429 with Retry-After.",
        ["api", "redis", "reliability"],
    ),
    D(
        "dec-idempotency-keys-api",
        "POST endpoints accept an Idempotency-Key header",
        "Integrators retried timeouts and created duplicate invoices.",
        "Responses stored 24 h in table idempotent_requests keyed by (api_key_id, key); a different body with "
        "the same key returns 422.",
        ["api", "reliability"],
    ),
    D(
        "dec-outgoing-webhooks",
        "Customers can subscribe to outgoing webhooks for invoice events",
        "Integrators polled the API every minute to see payments.",
        "Events invoice.finalised, invoice.paid, payment.failed; signed with HMAC-SHA256 in header "
        "Quillbill-Signature; retried with exponential backoff for 3 days.",
        ["api", "webhooks"],
    ),
    D(
        "dec-problem-json",
        "API errors use RFC 9457 problem details",
        "Integrators wanted machine-readable error codes instead of parsing messages.",
        "ProblemDetail(type, title, status, detail, code); exception handlers in app/api/errors.py.",
        ["api"],
    ),
    # --- deployment & infrastructure --------------------------------------------------------------
    D(
        "dec-aws-ecs",
        "Run on AWS ECS Fargate in eu-central-1",
        "Kubernetes was more operations than a team of five can carry; most customers want EU data residency.",
        "Services api, worker-default, worker-pdf, worker-email, scheduler; task definitions in infra/ecs/.",
        ["infrastructure", "deployment"],
    ),
    D(
        "dec-terraform",
        "All infrastructure in Terraform, state in S3 with DynamoDB locking",
        "A security group edited in the console during an incident was silently overwritten a month later.",
        "infra/terraform/ with modules network, database, services; plan posted on pull requests by Atlantis.",
        ["infrastructure"],
    ),
    D(
        "dec-blue-green",
        "Deploy with rolling updates, not blue-green",
        "Blue-green doubled the database connection count at switch time; rolling updates with expand-contract "
        "migrations are enough.",
        "ECS minimumHealthyPercent 100, maximumPercent 150; health check GET /healthz/ready.",
        ["deployment"],
    ),
    D(
        "dec-migrations-before-deploy",
        "Migrations run as a one-off task before the new version rolls out",
        "Running them at container start raced between tasks and locked tables twice.",
        "The deploy workflow runs ecs run-task with the command alembic upgrade head and waits for exit 0.",
        ["deployment", "migrations", "ci"],
    ),
    D(
        "dec-secrets-manager",
        "Secrets in AWS Secrets Manager, injected as environment variables",
        "Secrets in the repository's .env.production were shared with every contractor who cloned it.",
        "Task definitions reference secret ARNs; local development uses .env.local which is ignored by git.",
        ["security", "infrastructure", "configuration"],
    ),
    D(
        "dec-eu-data-residency",
        "Customer data stays in the EU",
        "A GDPR requirement for most customers and a sales argument against US competitors.",
        "Backups replicate to eu-west-1 only; Sentry and Postmark EU regions; no US sub-processors for content.",
        ["compliance", "infrastructure"],
    ),
    D(
        "dec-cloudflare-waf",
        "Cloudflare in front of the load balancer for DDoS protection and WAF",
        "The login endpoint was hit by a 40k requests per second flood in August.",
        "Managed rules on; bot fight mode off because it blocked Stripe webhooks; origin only accepts "
        "Cloudflare IP ranges.",
        ["security", "infrastructure"],
    ),
    D(
        "dec-release-train",
        "Release every weekday at 10:00 CET from main",
        "Releasing on demand meant Friday evening deploys and weekend incidents.",
        "The workflow release.yml is scheduled; hotfixes go through the same pipeline with the label hotfix.",
        ["deployment", "release"],
    ),
    D(
        "dec-staging-anonymised",
        "Staging uses an anonymised copy of production refreshed weekly",
        "Bugs that depended on real data volumes never showed on seed data.",
        "scripts/anonymise.sql replaces names, emails, addresses and bank details before restoring to staging.",
        ["deployment", "database", "compliance"],
    ),
    # --- CI ---------------------------------------------------------------------------------------
    D(
        "dec-github-actions",
        "CI on GitHub Actions",
        "The code lives on GitHub; CircleCI minutes cost three times as much for our usage.",
        "Workflows ci.yml (pull requests), release.yml (scheduled), nightly.yml (slow tests, dependency audit).",
        ["ci"],
    ),
    D(
        "dec-ci-postgres-service",
        "Tests run against a real Postgres service container in CI",
        "SQLite in tests hid a FOR UPDATE bug in numbering that only Postgres showed.",
        "services: postgres:16 in ci.yml; pytest-xdist with one database per worker created from a template.",
        ["ci", "testing", "database"],
    ),
    D(
        "dec-ci-required-checks",
        "Merging needs green lint, types, tests and one review",
        "Two broken releases came from merges with a red type check 'to fix later'.",
        "Branch protection on main: ruff, mypy --strict, pytest, web-tests, one approval.",
        ["ci", "process"],
    ),
    D(
        "dec-ci-cache",
        "CI caches uv and npm downloads keyed by lock files",
        "Pull request pipelines took 14 minutes, 6 of them installing dependencies.",
        "actions/cache keyed by hashFiles('uv.lock') and hashFiles('web/package-lock.json').",
        ["ci", "performance"],
    ),
    D(
        "dec-uv",
        "Python dependencies managed with uv and a lock file",
        "pip-tools compile took 3 minutes and the two lock files drifted.",
        "pyproject.toml plus uv.lock; uv sync --frozen in Docker and CI.",
        ["ci", "backend"],
    ),
    D(
        "dec-docker-slim",
        "One Docker image for all backend services, based on python:3.12-slim",
        "Separate images for API and workers built the same code four times.",
        "Multi-stage Dockerfile; WeasyPrint's Pango and fonts installed in the final stage; image about 310 MB.",
        ["ci", "deployment"],
    ),
    D(
        "dec-dependabot",
        "Dependabot weekly with grouped minor updates",
        "Daily single-package pull requests were ignored and piled up.",
        None,
        ["ci", "security"],
    ),
    # --- observability ----------------------------------------------------------------------------
    D(
        "dec-opentelemetry",
        "Traces with OpenTelemetry exported to Grafana Tempo",
        "Vendor-neutral instrumentation; Datadog's price for our span volume was 2,000 USD a month.",
        "opentelemetry-instrumentation-fastapi, -sqlalchemy, -redis; OTEL_EXPORTER_OTLP_ENDPOINT points to the "
        "collector sidecar; sampling 10% plus every error.",
        ["observability"],
    ),
    D(
        "dec-structured-logs",
        "JSON logs with structlog, shipped to Loki",
        "grep over plain text logs could not answer which organisation an error belonged to.",
        "Every log line carries request_id, org_id, user_id, trace_id; never invoice contents or email bodies.",
        ["observability", "logging"],
    ),
    D(
        "dec-sentry",
        "Errors go to Sentry's EU region",
        "Stack traces with local variables save hours; the EU region keeps data residency.",
        "send_default_pii False; before_send strips Authorization headers and request bodies.",
        ["observability", "compliance"],
    ),
    D(
        "dec-slos",
        "SLOs: 99.9% availability and p95 under 400 ms for the invoice API",
        "Customers bill their clients with us; an hour of downtime on the last day of the month is the worst case.",
        "Burn-rate alerts in Grafana over 1 h and 6 h windows page the on-call person.",
        ["observability", "reliability"],
    ),
    D(
        "dec-oncall",
        "One person on call per week, paged only for SLO burn and failed payments processing",
        "Paging for every error led to ignored pages.",
        "PagerDuty schedule; runbooks linked from every alert in docs/runbooks/.",
        ["observability", "process"],
    ),
    D(
        "dec-business-metrics",
        "Business metrics in Prometheus counters, not from logs",
        "Counting finalised invoices from logs lost lines during Loki ingestion limits.",
        "invoices_finalised_total{plan}, payments_received_total{method}; scraped by the Grafana agent.",
        ["observability", "metrics"],
    ),
    # --- security & compliance --------------------------------------------------------------------
    D(
        "dec-soc2",
        "Pursue SOC 2 Type II in the first year",
        "Three enterprise deals required it; the controls matched what we wanted anyway.",
        "Evidence collection with Vanta; policies in the handbook repository.",
        ["compliance", "security"],
    ),
    D(
        "dec-gdpr-export-erasure",
        "Self-service data export and account deletion",
        "GDPR requests by email took a developer half a day each.",
        "Settings > Privacy: export as ZIP of JSON and PDFs built by the job build_org_export; deletion after a "
        "14-day grace period, except invoices under legal retention, which are anonymised.",
        ["compliance", "privacy"],
    ),
    D(
        "dec-audit-log",
        "An append-only audit log of security-relevant and financial actions",
        "SOC 2 requires it, and customers asked who changed a bank account number on their invoices.",
        "Table audit_events, INSERT-only role; AuditLog.record(actor, action, target, diff); shown to owners.",
        ["compliance", "security"],
    ),
    D(
        "dec-bank-details-change-confirmation",
        "Changing payout bank details needs re-authentication and an email confirmation",
        "An attacker with a stolen session changed an IBAN and redirected a month of payments at a competitor.",
        "StepUpAuth requires password or TOTP within 5 minutes; a confirmation link to all owners activates the "
        "change after 24 h.",
        ["security", "payments"],
    ),
    D(
        "dec-dependency-audit",
        "pip-audit and npm audit nightly; high severity blocks releases",
        "A vulnerable version of a PDF library ran in production for two months unnoticed.",
        None,
        ["security", "ci"],
    ),
    D(
        "dec-pentest-yearly",
        "An external penetration test every year before renewal season",
        "Enterprise questionnaires ask for the date of the last test.",
        None,
        ["security", "compliance"],
    ),
    # --- testing ----------------------------------------------------------------------------------
    D(
        "dec-pytest-factories",
        "Test data with factory_boy factories, no shared fixtures database",
        "A shared fixture dump made tests depend on each other's rows.",
        "tests/factories.py: OrgFactory, InvoiceFactory(lines=3), PaymentFactory.",
        ["testing"],
    ),
    D(
        "dec-playwright",
        "End-to-end tests with Playwright on the critical paths only",
        "Cypress tests were flaky and slow; five journeys cover what breaks revenue: sign-up, create and send an "
        "invoice, pay as a client, upgrade plan, reset password.",
        "web/e2e/*.spec.ts; run in nightly.yml and before release against staging.",
        ["testing", "frontend"],
    ),
    D(
        "dec-stripe-test-clocks",
        "Subscription lifecycle tests use Stripe test clocks",
        "Trials and renewals could not be tested without waiting days.",
        "tests/integration/test_billing_lifecycle.py advances a test clock through trial end, renewal and "
        "failed payment.",
        ["testing", "billing", "stripe"],
    ),
    D(
        "dec-golden-pdfs",
        "Golden-file tests for invoice PDFs compare rendered text, not pixels",
        "Pixel comparison failed on every font hinting change in the base image.",
        "pdftotext output compared to tests/golden/*.txt; update with pytest --update-golden.",
        ["testing", "pdf"],
    ),
    D(
        "dec-property-tests-money",
        "Property-based tests for money and tax arithmetic",
        "A rounding bug in the reverse-charge path only appeared for amounts ending in 5 with 19% VAT.",
        "hypothesis strategies for Money and tax rates in tests/test_tax_properties.py.",
        ["testing", "money", "tax"],
    ),
    # --- tax -------------------------------------------------------------------------------------
    D(
        "dec-tax-rates-table",
        "VAT rates in a dated table, never hard-coded",
        "Germany cut VAT temporarily in 2020 and rates change every year somewhere in the EU.",
        "tax_rates(country, category, rate_bp, valid_from, valid_to); rate in basis points, 1900 = 19%.",
        ["tax", "database"],
    ),
    D(
        "dec-oss-reporting",
        "Report EU One-Stop-Shop VAT totals per country for B2C sales",
        "Customers selling to consumers across the EU must file OSS returns quarterly.",
        "Report oss_quarterly in reports/oss.py, grouped by client country and rate.",
        ["tax", "reports"],
    ),
    D(
        "dec-us-sales-tax-out",
        "No US sales tax calculation for now",
        "Only 3% of customers invoice US clients; nexus rules per state need a provider like Avalara.",
        None,
        ["tax", "scope"],
    ),
    # --- reports & search --------------------------------------------------------------------------
    D(
        "dec-reports-csv-xlsx",
        "Reports export to CSV and XLSX, DATEV format for German accountants",
        "Accountants import into their own software; DATEV is the standard in Germany.",
        "openpyxl for XLSX; DATEV EXTF format in reports/datev.py with the customer's consultant number.",
        ["reports", "integrations"],
    ),
    D(
        "dec-search-postgres-fts",
        "Search invoices and clients with Postgres full-text search, no Elasticsearch",
        "Our largest customer has 80,000 invoices; a GIN index answers in under 50 ms and there is no cluster to run.",
        "Generated tsvector column search_doc with the 'simple' configuration because client names are in many "
        "languages; trigram index for prefix matching on invoice numbers.",
        ["search", "database"],
    ),
    D(
        "dec-aged-receivables",
        "Aged receivables report buckets: current, 1-30, 31-60, 61-90, over 90 days",
        "Matches what accountants expect from their ledger software.",
        None,
        ["reports"],
    ),
]
