"""Write bench/tidy/corpus.json: the labelled memory `bench/tidy_quality.py` measures tidy proposals on.

The memory of a fictional shop backend ("Larder": orders, payments, a warehouse sync), written by hand:

- duplicate pairs: the same decision, pattern or task logged twice in other words (as agents do when
  they do not search first), some reworded heavily enough that words alone should not find them;
- near-misses: two items that share most words and must never be merged (another number, a negation,
  an antonym, another object of the same verb);
- contradictions: two decisions on one subject that disagree (labelled; a subset of the near-misses
  kind of text, kept apart to measure whether they are surfaced);
- superseded pairs: an old item and its replacement, linked `superseded_by`;
- stale progress: unfinished tasks last touched long ago;
- unique items: everything else;
- queries: tasks with the items (groups) that answer them, for retrieval and get_context before/after.

    python3 bench/tidy/build_corpus.py     # rewrites bench/tidy/corpus.json (deterministic)
"""

from __future__ import annotations

import json
from pathlib import Path

# (type, first text, second text); decisions may carry a rationale after " || ".
DUPLICATES = [
    ("decision", "Use SQLite in WAL mode for the local store", "Use SQLite with WAL mode for the local store"),
    ("decision", "Store money as integer cents, never floats", "Money is stored as integer cents, never as floats"),
    ("decision", "Orders are soft-deleted with a deleted_at column", "Soft-delete orders using a deleted_at column"),
    ("decision", "Payments go through Stripe Checkout", "All payments go through Stripe Checkout"),
    ("decision", "Use UUIDv7 for public order identifiers", "Public order identifiers are UUIDv7"),
    (
        "decision",
        "Warehouse sync runs every 15 minutes from cron",
        "The warehouse sync runs from cron every 15 minutes",
    ),
    ("decision", "API errors follow RFC 9457 problem details", "API error bodies follow RFC 9457 problem details"),
    ("decision", "Prices include VAT in the storefront", "Storefront prices are shown including VAT"),
    ("decision", "Use Alembic for database migrations", "Database migrations are managed with Alembic"),
    ("decision", "Session cookies are HttpOnly and SameSite=Lax", "Session cookies must be HttpOnly and SameSite=Lax"),
    ("decision", "Background jobs run on Dramatiq with Redis", "Run background jobs on Dramatiq backed by Redis"),
    ("decision", "Invoices are rendered to PDF with WeasyPrint", "Render invoices to PDF using WeasyPrint"),
    ("decision", "Feature flags live in the settings table", "Keep feature flags in the settings table"),
    ("decision", "Log in JSON lines to stdout", "Logs are JSON lines written to stdout"),
    ("decision", "Customer emails are sent through Postmark", "Send customer emails through Postmark"),
    (
        "decision",
        "Stock levels are reserved when the cart is checked out",
        "Reserve stock levels when the cart is checked out",
    ),
    ("decision", "Use pytest with factory_boy fixtures for tests", "Tests use pytest with factory_boy fixtures"),
    (
        "decision",
        "Timestamps are stored in UTC and shown in the shop's zone",
        "Store timestamps in UTC and show them in the shop's zone",
    ),
    ("decision", "Refunds are issued only by the payments service", "Only the payments service issues refunds"),
    (
        "decision",
        "Product images are resized on upload to three widths",
        "Resize product images on upload to three widths",
    ),
    ("decision", "The admin is a separate Django app behind SSO", "Admin runs as a separate Django app behind SSO"),
    (
        "decision",
        "Rate limit the public API to 100 requests per minute per key",
        "Public API rate limit: 100 requests per minute per key",
    ),
    (
        "decision",
        "Addresses are validated with the postal lookup before saving",
        "Validate addresses with the postal lookup before saving them",
    ),
    ("decision", "Use ruff for linting and formatting", "Linting and formatting are done with ruff"),
    (
        "decision",
        "Webhooks from Stripe are verified with the signing secret",
        "Verify Stripe webhooks with the signing secret",
    ),
    ("decision", "Discount codes are case-insensitive", "Treat discount codes as case-insensitive"),
    (
        "decision",
        "Cart contents expire after 30 days of inactivity",
        "Expire cart contents after 30 days of inactivity",
    ),
    (
        "decision",
        "The search index is rebuilt nightly from the catalogue",
        "Rebuild the search index nightly from the catalogue",
    ),
    ("decision", "Order numbers are sequential per shop", "Use sequential order numbers per shop"),
    ("decision", "Every outgoing HTTP call has a 10 second timeout", "All outgoing HTTP calls get a 10 second timeout"),
    # reworded heavily: words alone should not find these (recall below 1 is expected)
    (
        "decision",
        "Deploy with blue-green switches on the load balancer",
        "Releases flip traffic between two identical environments at the balancer",
    ),
    (
        "decision",
        "Cache product pages at the CDN for five minutes",
        "The CDN keeps rendered product pages for 300 seconds",
    ),
    (
        "decision",
        "Use Postgres row-level locks when decrementing stock",
        "Stock decrements take SELECT FOR UPDATE locks in the database",
    ),
    (
        "system_pattern",
        "Repository per aggregate || One repository class per aggregate root, no generic repository",
        "Repository per aggregate root || Each aggregate root gets its own repository class; no generic repository",
    ),
    (
        "system_pattern",
        "Outbox for events || Domain events are written to an outbox table in the same transaction",
        "Event outbox || Domain events go into an outbox table within the same transaction",
    ),
    (
        "system_pattern",
        "Idempotency keys || Mutating API calls accept an Idempotency-Key header and replay the stored response",
        "Idempotency keys on writes || Mutating API calls take an Idempotency-Key header; the "
        "stored response is replayed",
    ),
    (
        "system_pattern",
        "Money value object || Amounts travel as a Money value with currency and integer cents",
        "Money as a value object || Amounts are passed as a Money value holding currency and integer cents",
    ),
    (
        "system_pattern",
        "Service layer transactions || A service method opens the transaction; repositories never commit",
        "Transactions in the service layer || Service methods open the transaction and repositories never commit",
    ),
    ("progress", "Add Apple Pay to the checkout page", "Add Apple Pay on the checkout page"),
    ("progress", "Migrate the order history page to the new API", "Move the order history page to the new API"),
    ("progress", "Write load tests for the cart endpoints", "Write load tests for cart endpoints"),
    ("progress", "Fix the rounding error in VAT totals", "Fix VAT totals rounding error"),
    ("progress", "Set up alerts for failed warehouse syncs", "Set up alerting for failed warehouse syncs"),
    ("progress", "Document the public API authentication flow", "Document the authentication flow of the public API"),
    ("progress", "Translate the storefront into German", "Translate storefront into German"),
    (
        "custom_data",
        "glossary|SKU|Stock keeping unit: one sellable variant of a product",
        "glossary|SKUs|A stock keeping unit: one sellable variant of a product",
    ),
]

# Must never be merged: (type, a, b, why).
NEAR_MISSES = [
    ("decision", "Warehouse sync runs every 5 minutes", "Warehouse sync runs every 50 minutes", "number"),
    ("decision", "Use Redis for the session cache", "Use Redis for the job queue", "object"),
    ("decision", "Use Postgres 15 in production", "Use Postgres 16 in production", "number"),
    ("decision", "Encrypt customer addresses at rest", "Encrypt payment tokens at rest", "object"),
    ("decision", "Retry failed webhooks 3 times", "Retry failed webhooks 10 times", "number"),
    ("decision", "Product pages are server-rendered", "Checkout pages are server-rendered", "object"),
    ("decision", "Guest checkout is allowed", "Guest checkout is not allowed", "negation"),
    (
        "decision",
        "Send the order confirmation email synchronously",
        "Send the order confirmation email asynchronously",
        "antonym",
    ),
    ("decision", "Enable HTTP/2 on the storefront", "Disable HTTP/2 on the admin", "antonym"),
    ("decision", "Keep order PDFs for 7 years", "Keep audit logs for 7 years", "object"),
    ("decision", "The mobile app uses the public API", "The admin uses the internal API", "object"),
    ("decision", "Limit uploads to 10 MB per image", "Limit uploads to 50 MB per video", "object"),
    ("decision", "Round VAT per line item", "Round VAT per invoice total", "object"),
    ("decision", "Index orders by customer_id", "Index orders by created_at", "object"),
    ("decision", "Use Celery for scheduled reports", "Use cron for scheduled reports", "object"),
    ("decision", "Show prices with two decimals", "Show weights with two decimals", "object"),
    ("decision", "Cart API returns 409 on stock conflicts", "Cart API returns 422 on invalid quantities", "object"),
    ("decision", "Ship EU orders from the Berlin warehouse", "Ship UK orders from the Leeds warehouse", "object"),
    (
        "decision",
        "Password reset links expire after 1 hour",
        "Email verification links expire after 24 hours",
        "object",
    ),
    (
        "decision",
        "Always log the order id with payment errors",
        "Never log the card number with payment errors",
        "antonym",
    ),
    (
        "system_pattern",
        "Read models || Order lists are served from a denormalised read table",
        "Write models || Order changes go through the aggregate and its repository",
        "object",
    ),
    (
        "system_pattern",
        "Retry with backoff || Outgoing calls retry with exponential backoff and jitter",
        "Circuit breaker || Outgoing calls stop for 30 seconds after 5 failures",
        "object",
    ),
    ("progress", "Add Apple Pay to the mobile app", "Add Google Pay to the mobile app", "object"),
    ("progress", "Write load tests for the checkout endpoints", "Write load tests for the search endpoints", "object"),
    ("progress", "Translate the storefront into French", "Translate the storefront into Spanish", "object"),
    ("progress", "Upgrade Django to 5.1", "Upgrade Django to 5.2", "number"),
    ("progress", "Remove the legacy coupon table", "Remove the legacy voucher endpoint", "object"),
    ("progress", "Fix the login redirect on Safari", "Fix the login redirect on Firefox", "object"),
    (
        "custom_data",
        "glossary|Variant|One sellable version of a product: a size or a colour",
        "glossary|Option|One choice of a product, such as a size or a colour",
        "object",
    ),
    (
        "custom_data",
        "glossary|Backorder|An order for stock that is not yet in the warehouse",
        "glossary|Preorder|An order for a product that is not yet released",
        "object",
    ),
]

# Same subject, disagreeing: surfaced, never merged.
CONTRADICTIONS = [
    ("decision", "Cache the product catalogue in Redis", "Never cache the product catalogue"),
    ("decision", "Tax is calculated in the storefront", "Tax is not calculated in the storefront"),
    ("decision", "Use REST for the public API", "Avoid REST for the public API; use GraphQL"),
    ("decision", "Order emails are sent synchronously", "Order emails are sent asynchronously"),
    ("decision", "Keep the admin on a public URL", "Keep the admin on a private URL"),
    ("decision", "Product slugs are mutable", "Product slugs are immutable"),
    ("decision", "Free shipping above 50 EUR", "Free shipping above 75 EUR"),
    ("decision", "Allow editing an order after payment", "Forbid editing an order after payment"),
    (
        "decision",
        "Inventory counts are synchronous with the warehouse",
        "Inventory counts are asynchronous with the warehouse",
    ),
    ("decision", "Refund window is 14 days", "Refund window is 30 days"),
    ("decision", "Enable two-factor login for admins", "Disable two-factor login for admins"),
    ("decision", "Reviews are public without moderation", "Reviews are not public without moderation"),
]

# (old, new): the old one is linked superseded_by the new one.
SUPERSEDED = [
    ("decision", "Deploy to Heroku", "Deploy to Fly.io with one machine per region"),
    ("decision", "Use Mailgun for email", "Use Postmark for email (Mailgun dropped for deliverability)"),
    ("decision", "Search with Postgres LIKE queries", "Search with Meilisearch"),
    ("decision", "Store sessions in the database", "Store sessions in signed cookies"),
    ("decision", "Images on local disk", "Images in S3 behind the CDN"),
    ("decision", "Payments through PayPal only", "Payments through Stripe with PayPal as a method"),
    ("decision", "Nightly full warehouse export", "Incremental warehouse sync every 15 minutes"),
    ("decision", "One monolith repository for web and mobile", "Separate repositories for web and the mobile app"),
    ("decision", "Admin built with Flask-Admin", "Admin built as a Django app"),
    ("decision", "API versioned by URL path", "API versioned by a date header"),
    (
        "system_pattern",
        "Active record || Models save themselves",
        "Repositories || Aggregates are loaded and saved by repositories",
    ),
    (
        "system_pattern",
        "Signals for side effects || Django signals send emails",
        "Outbox for side effects || Emails leave through the outbox worker",
    ),
    ("progress", "Evaluate Elasticsearch for search", "Set up Meilisearch for product search"),
    ("progress", "Write the Heroku deploy script", "Write the Fly.io deploy workflow"),
    ("decision", "Coupons stored as JSON on the order", "Coupons stored in a coupon_redemptions table"),
]

# Unfinished and untouched for months.
STALE = [
    "Investigate slow admin order search",
    "Prototype a loyalty points programme",
    "Spike: GraphQL gateway",
    "Clean up unused product attributes",
    "Try HTMX for the cart drawer",
    "Benchmark WeasyPrint against Playwright",
    "Audit third-party scripts on the storefront",
    "Design a B2B price list feature",
    "Add Klarna as a payment method",
    "Evaluate a headless CMS for the blog",
    "Write a migration guide for the v1 API",
    "Add barcode scanning to the app",
    "Experiment with edge caching of the cart",
    "Support multiple currencies at checkout",
    "Port the reporting scripts to dbt",
    "Draft the accessibility statement",
    "Add product bundles",
    "Review the returns flow with support",
    "Measure checkout drop-off per step",
    "Automate the VAT filing export",
]

UNIQUE = [
    ("decision", "The storefront is a Next.js app reading the public API"),
    ("decision", "Shipping labels are bought through Sendcloud"),
    ("decision", "Product descriptions are written in Markdown"),
    ("decision", "The warehouse pushes stock changes by webhook"),
    ("decision", "Customer passwords are hashed with Argon2id"),
    ("decision", "Staging data is a nightly anonymised copy of production"),
    ("decision", "Error tracking goes to Sentry with PII scrubbing"),
    ("decision", "Order state changes are a state machine with explicit transitions"),
    ("decision", "The checkout is a single page with three collapsible steps"),
    ("decision", "Gift cards are a payment method, not a product"),
    ("decision", "Return labels are generated by the carrier API"),
    ("decision", "Abandoned cart emails go out after 4 hours"),
    ("decision", "Backups are taken hourly and kept for 35 days"),
    ("decision", "Secrets come from the platform's secret store, never from files"),
    ("decision", "The mobile app is built with React Native"),
    ("decision", "Analytics events are sent to Plausible without cookies"),
    ("decision", "Admin actions are written to an audit log table"),
    ("decision", "Supplier invoices are matched to purchase orders by number"),
    ("decision", "Product variants share one SKU prefix"),
    ("decision", "Customer support uses Help Scout linked by email address"),
    ("decision", "A/B tests are assigned by hashing the visitor id"),
    ("decision", "The sitemap is generated on every catalogue publish"),
    ("decision", "Out-of-stock products stay visible with a notify-me button"),
    ("decision", "Fonts are self-hosted"),
    ("decision", "The cookie banner only appears for EU visitors"),
    ("system_pattern", "Query objects || Complex reads live in query classes returning plain dataclasses"),
    ("system_pattern", "Feature folders || Code is grouped by feature, not by layer"),
    ("system_pattern", "Contract tests || Every external API client has recorded contract tests"),
    ("system_pattern", "Health checks || Each service exposes /healthz checking its own dependencies"),
    ("system_pattern", "Config as dataclasses || Settings are parsed once into frozen dataclasses"),
    ("progress", "Ship the new product detail page"),
    ("progress", "Add order export to CSV for accountants"),
    ("progress", "Make the cart drawer keyboard accessible"),
    ("progress", "Move image processing to a worker"),
    ("progress", "Add a status page"),
    ("progress", "Split the payments module out of the monolith"),
    ("progress", "Reduce checkout bundle size below 150 KB"),
    ("progress", "Set up Dependabot for the backend"),
    ("progress", "Write the incident runbook for payment outages"),
    ("progress", "Add a stock history chart to the admin"),
    ("custom_data", "glossary|Fulfilment|Picking, packing and shipping an order"),
    ("custom_data", "glossary|RMA|Return merchandise authorisation: the approval for a return"),
    ("custom_data", "glossary|Basket|The storefront's word for the cart"),
    ("custom_data", "glossary|Drop ship|The supplier ships straight to the customer"),
    ("custom_data", "glossary|Landed cost|Purchase price plus shipping, duty and fees"),
    ("custom_data", "glossary|Lead time|Days between ordering from a supplier and receiving the stock"),
    ("custom_data", "glossary|Shrinkage|Stock lost to damage, theft or counting errors"),
    ("custom_data", "glossary|Cycle count|Counting part of the warehouse each day instead of all at once"),
    ("custom_data", "glossary|PO|Purchase order sent to a supplier"),
    ("custom_data", "glossary|AOV|Average order value"),
    ("decision", "Carrier rates are fetched live at checkout and cached for one hour"),
    ("decision", "Marketing consent is stored per channel with its timestamp"),
    ("decision", "The product feed for Google Shopping is built hourly"),
    ("decision", "Bulk price changes go through a preview screen first"),
    ("decision", "Customer accounts can be merged by support only"),
    ("decision", "Order notes from customers are limited to 500 characters"),
    ("decision", "The storefront supports dark mode from the system setting"),
    ("decision", "Warehouse bins are named aisle-shelf-slot"),
    ("decision", "Promotions cannot stack unless marked combinable"),
    ("decision", "Picking lists are sorted by bin location"),
    ("decision", "The API documentation is generated from the OpenAPI schema"),
    ("decision", "Web vitals are tracked on every storefront page"),
    ("decision", "Product reviews need a verified purchase"),
    ("decision", "Invoices are numbered per calendar year"),
    ("decision", "Supplier data is imported from CSV uploads"),
    ("system_pattern", "Anti-corruption layer || The warehouse client maps its payloads to our own types"),
    ("system_pattern", "Pagination by cursor || List endpoints page with opaque cursors, never offsets"),
    ("system_pattern", "Domain errors || Services raise domain errors; views map them to HTTP statuses"),
    ("system_pattern", "Background job envelopes || Jobs carry a version and an idempotency key"),
    ("system_pattern", "Snapshot tests for emails || Rendered emails are compared with stored snapshots"),
    ("progress", "Add Klarna webhooks to the payments service"),
    ("progress", "Show delivery estimates on the product page"),
    ("progress", "Add a low-stock report for purchasing"),
    ("progress", "Let customers download invoices from their account"),
    ("progress", "Add a return reason dropdown"),
    ("progress", "Refactor the shipping rate calculator"),
    ("progress", "Add structured data for products"),
    ("progress", "Record picking times per order"),
    ("custom_data", "glossary|Bin|A numbered storage slot in the warehouse"),
    ("custom_data", "glossary|Pick list|The items a picker collects for one or more orders"),
    ("custom_data", "glossary|Chargeback|A payment reversed by the card issuer"),
    ("custom_data", "glossary|Net terms|Invoice payment due a number of days after delivery"),
]

# Tasks (get_context and search), each with the corpus keys of the items that answer it.
QUERIES = [
    ("How do we store money amounts?", ["dup-1", "dup-36"]),
    ("Set up the local SQLite store", ["dup-0"]),
    ("Which payment provider handles checkout?", ["dup-3", "sup-5"]),
    ("How are orders deleted?", ["dup-2"]),
    ("When does the warehouse sync run?", ["dup-5", "sup-6"]),
    ("Format of API error responses", ["dup-6"]),
    ("Are storefront prices shown with VAT?", ["dup-7"]),
    ("How do we run database migrations?", ["dup-8"]),
    ("Session cookie settings", ["dup-9", "sup-3"]),
    ("Where do background jobs run?", ["dup-10"]),
    ("Render invoices as PDF", ["dup-11"]),
    ("Where are feature flags kept?", ["dup-12"]),
    ("How do we send customer email?", ["dup-14", "sup-1"]),
    ("Reserve stock at checkout", ["dup-15"]),
    ("How are refunds issued?", ["dup-18"]),
    ("Resize product images on upload", ["dup-19"]),
    ("Public API rate limit per key", ["dup-21"]),
    ("Verify Stripe webhook signatures", ["dup-24"]),
    ("Cart expiry after inactivity", ["dup-26"]),
    ("Rebuild the search index", ["dup-27", "sup-2"]),
    ("Timeouts on outgoing HTTP calls", ["dup-29"]),
    ("Repository classes for aggregates", ["dup-33", "sup-10"]),
    ("Publish domain events reliably with an outbox", ["dup-34", "sup-11"]),
    ("Idempotency-Key header on API writes", ["dup-35"]),
    ("Add Apple Pay to checkout", ["dup-38"]),
    ("Order history page on the new API", ["dup-39"]),
    ("Load tests for the cart", ["dup-40"]),
    ("VAT totals rounding", ["dup-41", "near-12"]),
    ("Where do we deploy?", ["sup-0"]),
    ("What is a SKU?", ["dup-45"]),
]


def _split(kind: str, text: str) -> dict[str, object]:
    if kind == "custom_data":
        category, key, value = text.split("|", 2)
        return {
            "type": kind,
            "category": "ProjectGlossary" if category == "glossary" else category,
            "key": key,
            "value": value,
        }
    if kind == "system_pattern":
        name, _, description = text.partition(" || ")
        return {"type": kind, "name": name, "description": description or name}
    if kind == "progress":
        return {"type": kind, "status": "TODO", "description": text}
    summary, _, rationale = text.partition(" || ")
    return {"type": kind, "summary": summary, **({"rationale": rationale} if rationale else {})}


def build() -> dict[str, object]:
    items: list[dict[str, object]] = []
    dup_groups, near_pairs, contra_pairs, superseded, stale = [], [], [], [], []

    def add(key: str, kind: str, text: str, **extra: object) -> str:
        items.append({"ref": key, **_split(kind, text), **extra})
        return key

    for n, (kind, a, b) in enumerate(DUPLICATES):
        dup_groups.append([add(f"dup-{n}", kind, a), add(f"dup-{n}b", kind, b)])
    for n, (kind, a, b, why) in enumerate(NEAR_MISSES):
        near_pairs.append({"items": [add(f"near-{n}", kind, a), add(f"near-{n}b", kind, b)], "why": why})
    for n, (kind, a, b) in enumerate(CONTRADICTIONS):
        contra_pairs.append([add(f"contra-{n}", kind, a), add(f"contra-{n}b", kind, b)])
    for n, (kind, old, new) in enumerate(SUPERSEDED):
        superseded.append([add(f"sup-old-{n}", kind, old), add(f"sup-{n}", kind, new)])
    for n, text in enumerate(STALE):
        stale.append(add(f"stale-{n}", "progress", text, updated_days_ago=200 + n))
    for n, (kind, text) in enumerate(UNIQUE):
        add(f"uniq-{n}", kind, text)
    return {
        "items": items,
        "duplicate_groups": dup_groups,
        "near_misses": near_pairs,
        "contradictions": contra_pairs,
        "superseded": superseded,
        "stale": stale,
        "queries": [{"task": task, "answers": answers} for task, answers in QUERIES],
    }


if __name__ == "__main__":
    corpus = build()
    out = Path(__file__).with_name("corpus.json")
    out.write_text(json.dumps(corpus, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{out}: {len(corpus['items'])} items")
