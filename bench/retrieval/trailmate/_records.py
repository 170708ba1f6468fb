"""The memory of Trailmate, a fictional offline hiking app for Android and iOS, session by session.

Each session is one working conversation between a developer and their agent, on one day; the
items are what the agent logged in it (decisions, patterns, progress, glossary terms, other custom
data). The session is the benchmark's grouping, never stored: search sees only the items.
"""

# ruff: noqa: E501 (records are prose; a sentence is kept on one line so it reads as the agent logged it)

from __future__ import annotations

from typing import Any


def D(key: str, summary: str, rationale: str, details: str | None, tags: list[str]) -> dict[str, Any]:
    item: dict[str, Any] = {"id": key, "type": "decision", "summary": summary, "rationale": rationale, "tags": tags}
    if details:
        item["implementation_details"] = details
    return item


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


# (session id, date, what the session was about, items logged in it)
SESSIONS: list[tuple[str, str, str, list[dict[str, Any]]]] = [
    (
        "s01",
        "2026-01-12",
        "Offline maps: how tile packs are downloaded and stored",
        [
            D(
                "d-mbtiles-packs",
                "Store offline regions as MBTiles files, one per downloaded region",
                "Hikers lose signal exactly where they need the map; a region must work with no network at all. "
                "MBTiles is a single SQLite file per region, easy to delete, move and checksum.",
                "RegionPackStore in shared/src/commonMain/kotlin/maps/RegionPackStore.kt; files under "
                "filesDir/regions/<regionId>.mbtiles; zoom 8 to 15 for trails.",
                ["maps", "offline"],
            ),
            D(
                "d-vector-tiles",
                "Vector tiles rather than raster for offline regions",
                "A raster pack of the Dolomites at zoom 15 was 1.9 GB; the same area as vector tiles is 240 MB "
                "and restyles for dark mode without a new download.",
                "MapLibre Native renders Mapbox Vector Tile format; the style JSON ships in the app bundle.",
                ["maps", "offline", "app-size"],
            ),
            D(
                "d-maplibre",
                "MapLibre Native instead of the Mapbox SDK",
                "The Mapbox SDK bills per monthly active user once past 25,000 and its licence forbids caching "
                "tiles from other sources; MapLibre is BSD licensed and reads our own tiles.",
                "maplibre-native 11 on Android (org.maplibre.gl) and iOS (MapLibre via Swift Package Manager).",
                ["maps", "costs"],
            ),
            S(
                "p-download-manager",
                "Region downloads run in a resumable download manager",
                "RegionDownloader splits a pack into 4 MB byte ranges, records finished ranges in the "
                "download_parts table and resumes after the app is killed. On Android it runs as a WorkManager "
                "CoroutineWorker with a foreground notification; on iOS as a background URLSession.",
                ["offline", "android", "ios"],
            ),
            T("t-offline-epic", "DONE", "Epic: offline regions (download, store, render without network)"),
            T(
                "t-region-picker",
                "DONE",
                "Region picker: draw a rectangle on the map, show the pack size before download",
                "t-offline-epic",
            ),
            T(
                "t-resume-downloads",
                "DONE",
                "Resume interrupted region downloads from the last finished byte range",
                "t-offline-epic",
            ),
            G(
                "g-region-pack",
                "region pack",
                "One downloaded offline area: an MBTiles file plus its trails and elevation data, installed as a unit.",
            ),
        ],
    ),
    (
        "s02",
        "2026-01-19",
        "GPS recording and battery drain",
        [
            D(
                "d-fused-location",
                "Record tracks with the fused location provider at 5 s intervals",
                "Raw GPS at 1 s drained 18 % battery per hour on a Pixel 7 in field tests; fused location at 5 s with "
                "a 10 m minimum displacement drained 7 % and the recorded tracks were within 12 m of the truth.",
                "Android: FusedLocationProviderClient, Priority.PRIORITY_HIGH_ACCURACY, setMinUpdateDistanceMeters(10f). "
                "iOS: CLLocationManager with activityType .fitness and distanceFilter 10.",
                ["gps", "battery", "android", "ios"],
            ),
            D(
                "d-foreground-service",
                "Track recording runs in an Android foreground service with a persistent notification",
                "Android 14 kills background location work after a few minutes; only a foreground service of type "
                "location keeps recording when the screen is off.",
                'TrackRecordingService declares foregroundServiceType="location"; the notification shows distance '
                "and a Pause action.",
                ["gps", "android"],
            ),
            D(
                "d-douglas-peucker",
                "Simplify recorded tracks before saving and uploading",
                "A six-hour hike at 5 s intervals is 4,300 points; Douglas-Peucker with a 3 m tolerance keeps the "
                "shape with about 600 points and cuts upload size by 85 %.",
                "TrackSimplifier.simplify(points, toleranceMeters = 3.0) in shared code; raw points kept locally for 7 days.",
                ["gps", "sync"],
            ),
            S(
                "p-location-flow",
                "Location updates are a cold Flow shared in the recording scope",
                "LocationSource exposes Flow<Fix>; the recorder collects it with shareIn(recordingScope, "
                "SharingStarted.WhileSubscribed(5_000)) so the map screen and the recorder share one subscription "
                "to the hardware.",
                ["gps", "kotlin"],
            ),
            T("t-battery-test", "DONE", "Battery field test: three devices, 4 h hike, raw GPS vs fused 5 s"),
            T("t-auto-pause", "IN_PROGRESS", "Auto-pause recording when the hiker stands still for 2 minutes"),
            G(
                "g-fix",
                "fix",
                "One location reading: latitude, longitude, altitude, accuracy in metres and a timestamp.",
            ),
        ],
    ),
    (
        "s03",
        "2026-01-26",
        "Accounts and syncing hikes between devices",
        [
            D(
                "d-sign-in-apple-google",
                "Accounts only through Sign in with Apple and Google Sign-In",
                "Email and password meant a reset flow, a mail provider and a support queue; 93 % of beta testers "
                "already used one of the two. App Store rules require Sign in with Apple when another social login exists.",
                "Firebase Authentication is not used: our Ktor backend verifies the identity tokens directly "
                "(AppleIdTokenVerifier, GoogleIdTokenVerifier).",
                ["accounts", "auth"],
            ),
            D(
                "d-local-first",
                "Local-first: the phone's database is the source of truth, the server is a replica",
                "Hikers record with no signal for days; every write must succeed offline and sync later.",
                "SQLDelight database on the device; a sync_outbox table holds changes until SyncWorker uploads them.",
                ["sync", "offline"],
            ),
            D(
                "d-lww-conflicts",
                "Resolve sync conflicts by last writer wins per field, using hybrid logical clocks",
                "Two devices editing the same hike offline is rare (0.3 % of syncs in beta); per-field merging keeps "
                "a title edit on one phone and a photo added on the other. Wall clocks on phones drift by minutes.",
                "HybridLogicalClock in shared/sync/Hlc.kt; each field stores (value, hlc); merge keeps the greater hlc.",
                ["sync"],
            ),
            S(
                "p-sync-outbox",
                "Outbox table drained by one sync worker",
                "Every local write appends a row to sync_outbox in the same SQLDelight transaction. SyncWorker sends "
                "rows in order in batches of 50, deletes them on a 2xx answer, and backs off exponentially "
                '(30 s doubling to 1 h) on failure. Only one SyncWorker runs at a time (unique work name "sync").',
                ["sync", "offline"],
            ),
            T("t-sync-epic", "IN_PROGRESS", "Epic: sync hikes, waypoints and photos across devices"),
            T(
                "t-sync-hikes",
                "DONE",
                "Upload and download hikes with the outbox and /v1/sync endpoints",
                "t-sync-epic",
            ),
            T(
                "t-sync-photos",
                "IN_PROGRESS",
                "Sync photo attachments, original resolution only on Wi-Fi",
                "t-sync-epic",
            ),
            G(
                "g-hlc",
                "HLC",
                "Hybrid logical clock: a timestamp that combines the wall clock with a counter so events order correctly even when device clocks disagree.",
            ),
        ],
    ),
    (
        "s04",
        "2026-02-02",
        "Crash reporting and the release pipeline",
        [
            D(
                "d-sentry",
                "Sentry for crashes and ANRs on both platforms",
                "Firebase Crashlytics gave no symbolicated Kotlin/Native stack traces from the shared module; Sentry "
                "symbolicates both and groups ANRs.",
                "sentry-kotlin-multiplatform; dSYMs and ProGuard mappings uploaded by the Fastlane lanes; sample rate 1.0 "
                "for crashes, 0.1 for performance traces.",
                ["observability", "crashes"],
            ),
            D(
                "d-fastlane",
                "Fastlane builds and uploads both apps from GitHub Actions",
                "Manual uploads from a laptop were forgotten twice and once shipped a debug build; one lane per store "
                "makes a release reproducible.",
                "fastlane/Fastfile lanes android_beta (Play internal track) and ios_beta (TestFlight); signing through "
                "match with the certificates repo.",
                ["release", "ci"],
            ),
            D(
                "d-staged-rollout",
                "Every Play Store release rolls out in stages: 5 %, 20 %, 50 %, 100 %",
                "Version 1.4 crashed on Samsung devices with One UI 6 and reached every user in an hour; a staged "
                "rollout halts on the crash-free rate.",
                "Rollout advances every 24 h only if Sentry's crash-free sessions stay above 99.5 %; iOS uses phased "
                "release over 7 days.",
                ["release"],
            ),
            S(
                "p-version-codes",
                "Version codes are derived from the semantic version",
                "versionCode = major * 10000 + minor * 100 + patch, computed in build-logic/VersionPlugin.kt; the iOS "
                "CFBundleVersion uses the same number so a crash report names one build on both platforms.",
                ["release", "build"],
            ),
            T(
                "t-release-pipeline",
                "DONE",
                "Release pipeline: tag push builds, signs and uploads to Play internal track and TestFlight",
            ),
            T("t-anr-dashboard", "TODO", "Dashboard of ANRs per device model in Sentry"),
            G(
                "g-anr",
                "ANR",
                "Application Not Responding: Android's dialog when the main thread is blocked for 5 seconds; counted against the app in Play Console vitals.",
            ),
        ],
    ),
    (
        "s05",
        "2026-02-09",
        "Elevation profiles",
        [
            D(
                "d-dem-srtm",
                "Elevation from the Copernicus 30 m DEM, bundled in region packs",
                "GPS altitude is off by 20-40 m and jumps; a digital elevation model gives smooth climbs. Copernicus "
                "GLO-30 is free for commercial use and better than SRTM in the Alps.",
                "Tiles resampled to terrain-RGB PNG at zoom 12 and added to the region pack; ElevationSampler reads "
                "them bilinearly.",
                ["elevation", "offline"],
            ),
            D(
                "d-ascent-threshold",
                "Count total ascent with a 5 m hysteresis",
                "Summing every small rise reported 30 % more climbing than the official trail figures; ignoring "
                "changes under 5 m until the direction settles matches them within 3 %.",
                "AscentCalculator(hysteresisMeters = 5.0) in shared/elevation.",
                ["elevation"],
            ),
            S(
                "p-profile-chart",
                "Elevation profile drawn with a custom Canvas, not a chart library",
                "ProfileChart draws the profile on a Compose Canvas (SwiftUI Canvas on iOS) from a downsampled array "
                "of 512 points; dragging a finger moves a marker on the map. Chart libraries added 1.2 MB and could "
                "not sync the marker.",
                ["elevation", "ui"],
            ),
            T("t-elevation-epic", "DONE", "Epic: elevation profile on every hike and planned route"),
            T(
                "t-dem-pipeline",
                "DONE",
                "Pipeline that cuts Copernicus DEM tiles into region packs",
                "t-elevation-epic",
            ),
            T("t-profile-scrub", "DONE", "Scrub along the profile to move the map marker", "t-elevation-epic"),
            G(
                "g-dem",
                "DEM",
                "Digital elevation model: a grid of ground heights; we ship Copernicus GLO-30 tiles inside region packs.",
            ),
        ],
    ),
    (
        "s06",
        "2026-02-16",
        "Safety check-ins and push notifications",
        [
            D(
                "d-checkin",
                "Safety check-in: a contact is alerted if the hiker has not checked in by the expected return time",
                "The most requested feature in reviews from solo hikers; an alert from the server works even when the "
                "phone is dead.",
                "The app sends the planned route and return time to /v1/checkins; a scheduled job (CheckinMonitor) "
                "texts the emergency contact through Twilio 30 minutes after the deadline.",
                ["safety", "backend"],
            ),
            D(
                "d-fcm-apns",
                "Push through FCM on Android and APNs directly on iOS",
                "Sending iOS pushes through FCM added a second failure point and delayed deliveries by seconds; the "
                "backend already holds an APNs key.",
                "pushy (Java APNs client) with a .p8 token key; Firebase Admin SDK for FCM; tokens in device_tokens.",
                ["notifications", "backend"],
            ),
            D(
                "d-no-marketing-push",
                "No marketing push notifications",
                "Hikers keep notifications on for safety alerts; a promotional push would teach them to turn "
                "notifications off, and the check-in would fail silently.",
                None,
                ["notifications", "product"],
            ),
            T("t-checkin-epic", "IN_PROGRESS", "Epic: safety check-ins with an emergency contact"),
            T(
                "t-checkin-sms",
                "DONE",
                "Twilio SMS to the emergency contact with the last known position",
                "t-checkin-epic",
            ),
            T(
                "t-checkin-extend",
                "TODO",
                "Let the hiker extend the return time from the notification",
                "t-checkin-epic",
            ),
            G(
                "g-checkin",
                "check-in",
                "A promise to be back by a given time; if the hiker does not confirm, their emergency contact is alerted.",
            ),
        ],
    ),
    (
        "s07",
        "2026-02-23",
        "Subscriptions and in-app purchases",
        [
            D(
                "d-revenuecat",
                "RevenueCat for in-app subscriptions on both stores",
                "Validating Play Billing and StoreKit 2 receipts ourselves meant two server integrations and edge cases "
                "(grace periods, refunds, family sharing); RevenueCat handles both and sends one webhook.",
                'purchases-kmp SDK; entitlement "pro"; webhook /v1/billing/revenuecat updates users.entitlement_until.',
                ["billing", "subscriptions"],
            ),
            D(
                "d-pro-tier",
                "One paid tier, Trailmate Pro: offline regions, 3D terrain and check-ins",
                "Two paid tiers confused testers; offline maps are what people pay for.",
                "EUR 4.99 a month or EUR 29.99 a year; 7-day free trial on the yearly plan only.",
                ["billing", "product"],
            ),
            D(
                "d-paywall-after-value",
                "Show the paywall after the first recorded hike, not at launch",
                "An A/B test: paywall at launch converted 1.1 % and lost 22 % of new users in the first session; "
                "after the first hike it converted 2.9 %.",
                'Remote config key paywall_trigger = "after_first_hike".',
                ["billing", "growth"],
            ),
            T("t-restore-purchases", "DONE", "Restore purchases button on the settings screen (App Store requirement)"),
            T("t-grace-period", "DONE", "Keep Pro during the store's billing grace period after a failed renewal"),
            G(
                "g-entitlement",
                "entitlement",
                'What a user\'s purchases unlock; Trailmate has one, "pro", checked by EntitlementGate before a Pro feature opens.',
            ),
        ],
    ),
    (
        "s08",
        "2026-03-02",
        "Accessibility and translations",
        [
            D(
                "d-dynamic-type",
                "Support Dynamic Type and Android font scaling up to 200 %",
                "A reviewer with low vision could not read trail names; a third of our users are over 55.",
                "All text sizes in sp / Font.TextStyle; layouts tested at 200 % in the screenshot tests.",
                ["accessibility", "ui"],
            ),
            D(
                "d-talkback-map",
                "The map has a list alternative for screen reader users",
                "TalkBack and VoiceOver cannot describe a vector map; a list of nearby trails with distance and "
                "direction gives the same choices.",
                "NearbyTrailsList, announced when the map gains accessibility focus.",
                ["accessibility"],
            ),
            D(
                "d-crowdin",
                "Translations managed in Crowdin, in five languages",
                "German, French, Italian and Spanish users are 61 % of installs; volunteer hikers translate in Crowdin "
                "and a GitHub Action pulls the strings weekly.",
                "Android strings.xml and iOS String Catalogs generated from shared/i18n/*.json by the moko-resources plugin.",
                ["i18n"],
            ),
            S(
                "p-units",
                "Distances and heights are formatted by one UnitFormatter",
                "UnitFormatter picks metric or imperial from the user's setting (default: the locale's) and formats "
                "distance, ascent, pace and temperature; no screen formats a number itself.",
                ["i18n", "ui"],
            ),
            T("t-a11y-audit", "DONE", "Accessibility audit of the five main screens with TalkBack and VoiceOver"),
            T("t-rtl", "TODO", "Check right-to-left layouts before adding Hebrew"),
            G(
                "g-poi",
                "POI",
                "Point of interest: a hut, spring, viewpoint or parking place shown on the map and in search.",
            ),
        ],
    ),
    (
        "s09",
        "2026-03-09",
        "Route planning on the device",
        [
            D(
                "d-graphhopper",
                "Route planning offline with GraphHopper on the device",
                "Planning happens at the trailhead without signal; GraphHopper runs on Android and, through a "
                "Kotlin/Native port of its routing core, on iOS, with a hiking profile that prefers paths.",
                "Routing graphs built per region pack from OpenStreetMap (foot profile, sac_scale up to T4).",
                ["routing", "offline"],
            ),
            D(
                "d-sac-scale",
                "Hide alpine routes above T4 unless the hiker turns on expert mode",
                "Route planning sent a beginner over a T5 ridge in the beta; OSM's sac_scale tag marks difficulty.",
                "RoutingProfile.maxSacScale defaults to T3; expert mode raises it to T6 after a warning.",
                ["routing", "safety"],
            ),
            S(
                "p-osm-import",
                "OpenStreetMap data is imported per region with osmium",
                "The data pipeline cuts the Geofabrik extract with osmium extract, filters hiking tags "
                "(highway=path, route=hiking, sac_scale, trail_visibility) and builds the routing graph and the trail "
                "index for the pack.",
                ["routing", "data"],
            ),
            T("t-routing-epic", "IN_PROGRESS", "Epic: plan a route by tapping points on the map"),
            T("t-snap-to-trail", "DONE", "Snap tapped points to the nearest trail within 50 m", "t-routing-epic"),
            T(
                "t-round-trip",
                "TODO",
                "Suggest a round trip of a chosen length from the current position",
                "t-routing-epic",
            ),
            G(
                "g-sac",
                "SAC scale",
                "The Swiss Alpine Club's difficulty scale for mountain hiking, T1 (easy walking) to T6 (difficult alpine); stored in OSM as sac_scale.",
            ),
        ],
    ),
    (
        "s10",
        "2026-03-16",
        "Waypoints and photos",
        [
            D(
                "d-photo-exif",
                "Photos are placed on the track by their timestamp, not their EXIF GPS",
                "Many phones strip GPS from photos taken in the camera app when location permission is off; the "
                "timestamp always exists and the track gives the position at that moment.",
                "PhotoPlacer interpolates between the two fixes around the photo's DateTimeOriginal.",
                ["photos", "gps"],
            ),
            D(
                "d-photo-compression",
                "Upload photos as 2048 px HEIC/WebP, originals only on Wi-Fi",
                "Originals averaged 4.2 MB and mobile data in the mountains is slow and expensive.",
                "Android: WebP quality 80; iOS: HEIC quality 0.7; originals queued with requiresWifi.",
                ["photos", "sync"],
            ),
            S(
                "p-waypoint-model",
                "Waypoints belong to a hike and carry a type",
                "Waypoint(id, hikeId, position, type: WATER | SHELTER | VIEW | DANGER | NOTE, note, photoIds). "
                "DANGER waypoints are shared with other users of the same trail after moderation.",
                ["waypoints"],
            ),
            T("t-waypoints", "DONE", "Add, edit and delete waypoints while recording"),
            T("t-photo-gallery", "IN_PROGRESS", "Photo gallery per hike with the map position of each photo"),
            G(
                "g-waypoint",
                "waypoint",
                "A marked position on a hike with a type (water, shelter, view, danger, note) and optional photos.",
            ),
        ],
    ),
    (
        "s11",
        "2026-03-23",
        "Testing strategy",
        [
            D(
                "d-shared-tests",
                "Business logic tested once in the shared Kotlin module",
                "Sync, routing, elevation and formatting live in shared code; their tests run on the JVM in CI in 40 s "
                "and on iOS simulators nightly.",
                "kotlin.test in shared/src/commonTest; Turbine for Flows.",
                ["testing", "kotlin"],
            ),
            D(
                "d-paparazzi",
                "Screenshot tests with Paparazzi on Android and swift-snapshot-testing on iOS",
                "UI regressions (clipped text at large font sizes, dark mode colours) reached beta three times; "
                "screenshot tests catch them without a device.",
                "Golden images in */src/test/snapshots; recorded on CI with ./gradlew recordPaparazziDebug.",
                ["testing", "ui"],
            ),
            D(
                "d-firebase-test-lab",
                "Instrumented tests on real devices in Firebase Test Lab before each release",
                "Location and foreground service behaviour differs by manufacturer; Samsung and Xiaomi kill background "
                "work that emulators keep.",
                "Six device models per release run; 25 min budget.",
                ["testing", "android", "release"],
            ),
            S(
                "p-fake-location",
                "Recorded GPX files replay as a fake location source in tests",
                "FakeLocationSource(gpxFile, speedFactor) emits the fixes of a recorded hike; tests of the recorder, "
                "auto-pause and check-ins use the same five GPX files in testdata/tracks.",
                ["testing", "gps"],
            ),
            T("t-flaky-ui-tests", "IN_PROGRESS", "Fix flaky Espresso tests around the map's idle state"),
            G(
                "g-gpx",
                "GPX",
                "GPS Exchange Format: the XML file format for tracks and waypoints that hikers import and export.",
            ),
        ],
    ),
    (
        "s12",
        "2026-03-30",
        "Start-up time and app size",
        [
            D(
                "d-baseline-profiles",
                "Ship Baseline Profiles to cut Android cold start",
                "Cold start on a Galaxy A14 was 2.8 s; a baseline profile of the launch and map screens brought it to 1.6 s.",
                "Macrobenchmark module :benchmark generates baseline-prof.txt; checked weekly in CI.",
                ["performance", "android"],
            ),
            D(
                "d-lazy-map-init",
                "Initialise the map engine after the first frame",
                "MapLibre's initialisation took 400 ms on the main thread before anything was drawn; the home screen "
                "now shows the last hike card first and loads the map behind it.",
                "MapHost starts MapLibre from a LaunchedEffect after the first composition.",
                ["performance", "maps"],
            ),
            D(
                "d-app-bundle-size",
                "Keep the Android download under 30 MB",
                "Play Console data: installs drop 1 % for every 6 MB above 30 MB in our markets.",
                "R8 full mode, resource shrinking, per-ABI splits through the App Bundle; the size is checked in CI "
                "by bundletool get-size total and fails above 30 MB.",
                ["performance", "app-size", "android"],
            ),
            T("t-startup-trace", "DONE", "Trace cold start with Perfetto on three low-end devices"),
            T("t-ios-launch", "TODO", "Measure iOS launch with XCTest metrics and remove eager singletons"),
            G(
                "g-cold-start",
                "cold start",
                "Launching the app when its process is not running: the slowest start, measured to the first drawn frame.",
            ),
        ],
    ),
    (
        "s13",
        "2026-04-06",
        "Location permission and privacy",
        [
            D(
                "d-while-in-use",
                "Ask only for location while the app is in use, never always",
                "A foreground service keeps recording with while-in-use permission; asking for background location "
                "triggers a Play policy review and scared testers away.",
                "ACCESS_FINE_LOCATION only; iOS NSLocationWhenInUseUsageDescription with allowsBackgroundLocationUpdates "
                "during recording.",
                ["privacy", "permissions", "gps"],
            ),
            D(
                "d-private-start",
                "Hide the first and last 200 m of shared tracks by default",
                "A shared hike that starts at a front door tells strangers where someone lives.",
                "PrivacyZone trims points within 200 m of the start and end before a track leaves the device; "
                "the hiker can turn it off per hike.",
                ["privacy", "sharing"],
            ),
            D(
                "d-analytics-consent",
                "No analytics before consent, and no third-party advertising SDKs",
                "GDPR requires consent for analytics cookies and device identifiers; our privacy label stays "
                '"Data Not Linked to You".',
                "ConsentStore gates the PostHog client; denied consent means no events at all.",
                ["privacy", "analytics"],
            ),
            T("t-privacy-label", "DONE", "Fill in the App Store privacy label and Play data safety form"),
            T("t-data-export", "IN_PROGRESS", "Export all of a user's hikes as GPX in a ZIP from the account screen"),
            G(
                "g-privacy-zone",
                "privacy zone",
                "The stretch at the start and end of a shared track that is hidden so nobody learns where the hiker lives.",
            ),
        ],
    ),
    (
        "s14",
        "2026-04-13",
        "Watch companion apps",
        [
            D(
                "d-watch-standalone",
                "The Apple Watch app records on its own, without the phone",
                "Trail runners leave the phone behind; watchOS gives GPS and a workout session.",
                "HKWorkoutSession with HKWorkoutBuilder; the track transfers to the phone through WatchConnectivity "
                "transferFile when they meet again.",
                ["watch", "ios"],
            ),
            D(
                "d-wear-os-later",
                "Wear OS companion postponed to after 3.0",
                "Wear OS is 4 % of our Android users' paired watches and would need its own tile and recording service.",
                None,
                ["watch", "android", "roadmap"],
            ),
            S(
                "p-watch-sync",
                "The watch sends finished tracks, never live points",
                "Sending every fix over WatchConnectivity drained the watch battery; the watch keeps the whole track and "
                "transfers one file when recording stops, retried until the phone acknowledges.",
                ["watch", "battery"],
            ),
            T("t-watch-app", "IN_PROGRESS", "watchOS app: start, pause and stop a recording; distance and heart rate"),
            T("t-watch-complication", "TODO", "Complication with the distance of the current hike"),
            G(
                "g-complication",
                "complication",
                "A small piece of app data shown on a watch face, such as the distance of the current hike.",
            ),
        ],
    ),
    (
        "s15",
        "2026-04-20",
        "Trail condition reports",
        [
            D(
                "d-condition-reports",
                "Hikers can report trail conditions: snow, mud, fallen trees, closures",
                "Official closure data arrives days late; reports from the last 48 h are what people ask for.",
                "ConditionReport(trailId, kind, note, photoId, createdAt); shown for 14 days, then hidden.",
                ["ugc", "trails"],
            ),
            D(
                "d-moderation-queue",
                "Reports with photos or free text go through a moderation queue",
                "Two abusive reports in the first week of beta; a report with only a kind and no text is low risk.",
                "Admin web app (React) lists pending reports; reports by users with five approved reports skip the queue.",
                ["ugc", "moderation"],
            ),
            S(
                "p-report-expiry",
                "Condition reports fade out instead of being deleted",
                "A report's weight halves every 3 days; the map shows reports above 0.25 weight, and the nightly "
                "ReportDecayJob archives those below. Old reports still count in trail statistics.",
                ["ugc", "backend"],
            ),
            T("t-reports-epic", "DONE", "Epic: trail condition reports with moderation"),
            T("t-report-photos", "DONE", "Attach one photo to a condition report", "t-reports-epic"),
            T(
                "t-report-notify",
                "TODO",
                "Notify hikers who saved a trail when a closure is reported",
                "t-reports-epic",
            ),
            G(
                "g-ugc",
                "UGC",
                "User-generated content: condition reports, photos and danger waypoints other hikers see.",
            ),
        ],
    ),
    (
        "s16",
        "2026-04-27",
        "Analytics and feature flags",
        [
            D(
                "d-posthog",
                "PostHog, self-hosted in the EU, for product analytics",
                "Google Analytics for Firebase sends data to the US and needs an advertising identifier; PostHog on "
                "our own servers in Frankfurt keeps the data in the EU.",
                "posthog-android and posthog-ios behind an AnalyticsClient interface; 40 named events in analytics/events.yaml.",
                ["analytics", "privacy"],
            ),
            D(
                "d-remote-config",
                "Feature flags from PostHog, cached for offline starts",
                "A flag service that needs the network at launch fails in the mountains; the last flags fetched are "
                "used until new ones arrive.",
                'FeatureFlags.isEnabled("three_d_terrain") reads a cached JSON in DataStore; defaults compiled in.',
                ["feature-flags", "offline"],
            ),
            T("t-events-schema", "DONE", "Event schema file and a lint that rejects events not in it"),
            T("t-funnel", "IN_PROGRESS", "Onboarding funnel: install, first map view, first hike, paywall"),
            C(
                "c-events",
                "Analytics",
                "key_events",
                {
                    "hike_recorded": "a recording longer than 500 m was saved",
                    "region_downloaded": "an offline region finished downloading",
                    "paywall_viewed": "the Pro paywall was shown",
                    "trial_started": "a free trial began",
                    "checkin_created": "a safety check-in was scheduled",
                },
            ),
        ],
    ),
    (
        "s17",
        "2026-05-04",
        "Backend API",
        [
            D(
                "d-ktor-backend",
                "Backend in Kotlin with Ktor, sharing models with the apps",
                "The team writes Kotlin every day; the sync and check-in payloads are the same data classes on server "
                "and phone, serialised with kotlinx.serialization.",
                "Ktor 3 on JVM 21, Exposed for SQL, deployed as one container on Fly.io in fra and ams.",
                ["backend", "kotlin"],
            ),
            D(
                "d-postgis",
                "PostgreSQL with PostGIS for trails, reports and check-ins",
                'Queries like "reports within 2 km of this trail" are spatial; PostGIS answers them with a GiST index.',
                "ST_DWithin on geography columns; trails.geom is a LINESTRING in EPSG:4326.",
                ["backend", "database"],
            ),
            D(
                "d-api-versioning",
                "API versions in the path, old versions kept for 12 months",
                "Users do not update their apps; 8 % still ran a six-month-old version. Breaking the sync for them loses data.",
                "/v1 and /v2 routes side by side; the app sends X-App-Version and the server logs versions per endpoint.",
                ["backend", "api"],
            ),
            S(
                "p-min-version",
                "A minimum supported app version forces an update screen",
                "GET /v1/config returns min_supported_version; an older app shows a blocking update screen with a link "
                "to the store, but recording and offline maps keep working.",
                ["api", "release"],
            ),
            T("t-backend-epic", "DONE", "Epic: backend for accounts, sync and check-ins"),
            T("t-rate-limit", "DONE", "Rate limit /v1/sync to 60 requests a minute per device", "t-backend-epic"),
            C(
                "c-endpoints",
                "API",
                "endpoints",
                {
                    "POST /v1/sync": "push outbox rows, pull changes since a cursor",
                    "POST /v1/checkins": "schedule a safety check-in",
                    "GET /v1/config": "flags, min_supported_version, tile CDN base URL",
                    "POST /v1/billing/revenuecat": "RevenueCat webhook",
                    "GET /v1/trails/{id}/reports": "condition reports of a trail",
                },
            ),
        ],
    ),
    (
        "s18",
        "2026-05-11",
        "Tile hosting and CDN costs",
        [
            D(
                "d-self-host-tiles",
                "Generate our own vector tiles with Planetiler and host them on Cloudflare R2",
                "MapTiler's plan would cost EUR 2,400 a month at our download volume; Planetiler builds Europe in 3 hours "
                "on one machine and R2 has no egress fees.",
                "Weekly Planetiler run on a Hetzner AX52; region packs uploaded to R2 bucket trailmate-packs.",
                ["maps", "costs", "infrastructure"],
            ),
            D(
                "d-pack-diff-updates",
                "Region packs update with binary diffs",
                "Re-downloading a 240 MB pack for a few changed trails wasted data; a bsdiff patch is usually under 5 MB.",
                "Server keeps the last three pack versions and their patches; PackUpdater applies the patch and checks "
                "the SHA-256 before swapping files.",
                ["maps", "offline"],
            ),
            S(
                "p-atomic-swap",
                "Pack files are replaced by writing a new file and renaming it",
                "An update writes <regionId>.mbtiles.new, verifies its checksum, then renames it over the old file; a "
                "crash in between leaves the old pack usable.",
                ["offline", "reliability"],
            ),
            T("t-r2-migration", "DONE", "Move pack downloads from S3 to Cloudflare R2"),
            C(
                "c-costs",
                "Costs",
                "monthly_infrastructure_eur",
                {
                    "Fly.io": 310,
                    "Cloudflare R2": 95,
                    "Hetzner tile build": 64,
                    "Twilio SMS": 120,
                    "Sentry": 80,
                    "RevenueCat": 0,
                },
            ),
        ],
    ),
    (
        "s19",
        "2026-05-18",
        "Incident: offline packs broken after the 2.6 update",
        [
            D(
                "d-incident-pack-schema",
                "Postmortem: version 2.6 could not open packs downloaded by 2.5",
                "2.6 expected a metadata row (pack_format=3) that older packs lacked, so their maps were blank while "
                "offline; 1,900 users were affected before the rollout was halted at 20 %.",
                "Hotfix 2.6.1 treats a missing pack_format as 2 and migrates the metadata on open; a test opens packs "
                "of every previous format from testdata/packs.",
                ["incident", "offline", "maps"],
            ),
            S(
                "p-pack-format-tests",
                "Every release opens packs of all previous formats",
                "testdata/packs holds one small pack per pack_format since 1; PackCompatibilityTest opens each and "
                "renders a tile. A new format adds its pack to the folder.",
                ["testing", "offline"],
            ),
            T("t-postmortem", "DONE", "Write the postmortem of the blank-maps incident and share it in the beta forum"),
            T("t-pack-repair", "DONE", "In-app repair: re-verify packs and re-download broken ones"),
            C(
                "c-incident-timeline",
                "Incidents",
                "2026-05-blank-maps",
                "09:10 2.6 reaches 20 % rollout; 11:40 first reports of blank maps offline in the forum; 12:05 rollout "
                "halted; 16:30 2.6.1 submitted; next day 10:00 2.6.1 approved and rolled out.",
            ),
        ],
    ),
    (
        "s20",
        "2026-05-25",
        "Live location sharing and SOS",
        [
            D(
                "d-live-share",
                "Live location sharing through a web link that expires",
                "Family members do not have the app; a link opens a web map with the hiker's position every 2 minutes.",
                "Positions posted to /v1/live/{token}; the link expires 12 h after the hike ends; the web viewer is "
                "a static page on Cloudflare Pages.",
                ["safety", "sharing"],
            ),
            D(
                "d-sos-call",
                "The SOS button calls the local emergency number, it does not contact us",
                "We cannot run an emergency service; 112 works across Europe even without a SIM.",
                "SosScreen shows the coordinates in large type (and as what3words) for reading out to the operator.",
                ["safety"],
            ),
            S(
                "p-sparse-updates",
                "Live positions are sent sparsely on a bad connection",
                "LiveShareSender sends a position every 2 minutes, or every 10 minutes when the last upload failed; "
                "positions that could not be sent are dropped, only the newest matters.",
                ["safety", "battery"],
            ),
            T("t-live-share", "DONE", "Live share link from the recording screen"),
            G(
                "g-live-link",
                "live link",
                "A web link that shows where a hiker is during a hike; expires 12 hours after the hike ends.",
            ),
        ],
    ),
    (
        "s21",
        "2026-06-01",
        "App Store review rejections",
        [
            D(
                "d-review-location-string",
                "Explain in the permission prompt exactly why location is needed",
                'Apple rejected 2.7 under guideline 5.1.1: the purpose string said only "for maps".',
                'NSLocationWhenInUseUsageDescription: "Trailmate uses your location to show where you are on the map '
                'and to record your hikes."',
                ["release", "ios", "permissions"],
            ),
            D(
                "d-review-demo-account",
                "Give reviewers a demo account with Pro unlocked",
                "The reviewer could not reach the offline regions behind the paywall and rejected 2.8 for incomplete "
                "information.",
                "reviewer@trailmate.app with a lifetime entitlement granted in RevenueCat; credentials in the App "
                "Store Connect review notes.",
                ["release", "ios"],
            ),
            T(
                "t-review-checklist",
                "DONE",
                "Release checklist item: review notes, demo account and purpose strings checked",
            ),
            C(
                "c-rejections",
                "Release",
                "store_rejections",
                {
                    "2.7": "5.1.1 purpose string too vague",
                    "2.8": "2.1 reviewer could not reach Pro features",
                    "Play 2.9": "foreground service type not declared for the watch sync",
                },
            ),
        ],
    ),
    (
        "s22",
        "2026-06-08",
        "Design system and dark mode",
        [
            D(
                "d-design-tokens",
                "Colours and spacing come from design tokens exported from Figma",
                "Android and iOS drifted apart in colours; tokens generated from one Figma file keep them identical.",
                "Style Dictionary turns tokens.json into Compose Color objects and an iOS asset catalog.",
                ["design", "ui"],
            ),
            D(
                "d-dark-map-style",
                "A dark map style that keeps contour lines readable",
                "Hikers at dawn asked for a dark map; the first dark style hid the contour lines hikers navigate by.",
                "trailmate-dark.json with contour lines at 60 % opacity in light grey; switches with the system setting.",
                ["design", "maps"],
            ),
            S(
                "p-compose-theme",
                "One TrailmateTheme wraps every screen",
                "TrailmateTheme provides colours, typography and shapes from the tokens; screens never use raw colours. "
                "A lint check (RawColorDetector) fails on Color(0x...) outside the theme package.",
                ["design", "android"],
            ),
            T("t-dark-mode", "DONE", "Dark mode on every screen, following the system setting"),
            G(
                "g-design-token",
                "design token",
                "A named design value (colour, spacing, radius) exported from Figma and turned into code for both platforms.",
            ),
        ],
    ),
    (
        "s23",
        "2026-06-15",
        "Weather overlay",
        [
            D(
                "d-open-meteo",
                "Weather from Open-Meteo, cached for the planned hike",
                "Open-Meteo is free for our volume, needs no key and has hourly forecasts for mountain grid points "
                "with altitude correction.",
                "WeatherRepository fetches the hourly forecast for the route's highest point when a hike is planned and "
                "keeps it for offline viewing.",
                ["weather"],
            ),
            D(
                "d-thunderstorm-warning",
                "Warn before starting a hike when thunderstorms are forecast",
                "Afternoon storms are the biggest summer danger in the Alps; a warning at the start screen costs nothing.",
                "Warning when CAPE > 800 J/kg or weather code 95-99 within the planned hike's hours.",
                ["weather", "safety"],
            ),
            T("t-weather-overlay", "IN_PROGRESS", "Radar overlay on the map when online"),
            T("t-sunset-time", "DONE", "Show sunset time and warn when the planned hike ends after it"),
            G(
                "g-cape",
                "CAPE",
                "Convective available potential energy: a forecast value that signals thunderstorm risk.",
            ),
        ],
    ),
    (
        "s24",
        "2026-06-22",
        "Onboarding and retention",
        [
            D(
                "d-onboarding-three-screens",
                "Onboarding is three screens: permission, home region, done",
                "A seven-screen tour lost 38 % of new users before the map; asking for the home region lets us offer "
                "its offline pack at once.",
                "OnboardingFlow with LocationPermissionStep, HomeRegionStep and ReadyStep; skip on every screen.",
                ["onboarding", "growth"],
            ),
            D(
                "d-weekly-summary",
                "A weekly summary notification instead of streaks",
                "Streaks push people to hike in bad weather; a Sunday summary of distance and ascent brought back 12 % "
                "of lapsed users in the test.",
                "WeeklySummaryWorker at 18:00 local time on Sundays, only if the user recorded something that week.",
                ["growth", "notifications"],
            ),
            T("t-home-region-offer", "DONE", "Offer the home region's offline pack at the end of onboarding"),
            T("t-retention-cohorts", "TODO", "Week-4 retention cohorts by acquisition channel"),
            C(
                "c-retention",
                "Metrics",
                "retention_2026_q2",
                {"day_1": "41 %", "day_7": "23 %", "day_30": "14 %", "pro_conversion": "3.4 %"},
            ),
        ],
    ),
    (
        "s25",
        "2026-06-29",
        "On-device database migrations",
        [
            D(
                "d-sqldelight",
                "SQLDelight for the on-device database, shared by both apps",
                "Room is Android-only and Core Data iOS-only; SQLDelight generates typesafe Kotlin from SQL for both "
                "and its migrations are plain .sqm files.",
                "shared/src/commonMain/sqldelight/app/trailmate/db/*.sq; migrations in db/migrations/<n>.sqm.",
                ["database", "kotlin"],
            ),
            D(
                "d-migration-tests",
                "Every on-device schema migration is tested from every earlier version",
                "A migration that failed on 3 % of devices in 2.3 wiped their local hikes when the app recreated the "
                "database; hikes that were not synced were lost.",
                "verifySqlDelightMigration in CI; the app never drops the database on a failed migration, it copies "
                "the file aside and reports to Sentry.",
                ["database", "testing"],
            ),
            S(
                "p-migration-backup",
                "The database file is copied before a migration runs",
                "DatabaseOpener copies trailmate.db to trailmate.db.pre-<version> before migrating and deletes the copy "
                "after a week of successful starts.",
                ["database", "reliability"],
            ),
            T("t-migration-harness", "DONE", "Migration test harness with databases of every released schema"),
            G(
                "g-sqm",
                "sqm file",
                "A SQLDelight migration file: the SQL that moves the on-device database from one schema version to the next.",
            ),
        ],
    ),
    (
        "s26",
        "2026-07-06",
        "Release 3.0 retrospective",
        [
            D(
                "d-release-cadence",
                "Release every two weeks from a release branch",
                "Weekly releases left no time for the device test run and store review; monthly ones bundled too much risk.",
                "release/x.y branch cut on Monday of even weeks; hotfixes cherry-picked into it.",
                ["release", "process"],
            ),
            D(
                "d-kmp-ui-not-shared",
                "Keep native UIs; do not move to Compose Multiplatform yet",
                "Shared UI would save work, but the map, the watch app and the widgets are deeply native, and iOS users "
                "rated the SwiftUI screens higher.",
                None,
                ["architecture", "ui", "roadmap"],
            ),
            T("t-3-0", "DONE", "Release 3.0: 3D terrain, route planning and condition reports"),
            T("t-3-1-planning", "TODO", "Plan 3.1: Wear OS, round trips and the radar overlay"),
            C(
                "c-retro",
                "Retrospectives",
                "3.0",
                {
                    "went well": "staged rollouts caught a crash at 5 %; the migration harness found two bugs before beta",
                    "went badly": "store review took 4 days; the 3D terrain shader was slow on Mali GPUs",
                    "actions": "submit to review earlier; test on a Mali device before each release",
                },
            ),
            G(
                "g-3d-terrain",
                "3D terrain",
                "The Pro feature that tilts the map and draws the relief from the elevation data of the region pack.",
            ),
        ],
    ),
]

PRODUCT_CONTEXT = {
    "name": "Trailmate",
    "goal": "An offline hiking app for Android and iOS: maps that work without signal, track recording, route "
    "planning and safety features for hikers in the Alps and across Europe.",
    "stack": "Kotlin Multiplatform shared core; Jetpack Compose on Android, SwiftUI on iOS; MapLibre Native; "
    "SQLDelight; Ktor backend with PostgreSQL/PostGIS on Fly.io",
    "team": "three mobile developers, one backend developer, one designer",
}


def items() -> list[dict[str, Any]]:
    """Every item in the order it was logged, each with the id of its session."""
    return [{**item, "session": sid} for sid, _, _, logged in SESSIONS for item in logged]
