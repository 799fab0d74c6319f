"""A small labelled memory whose recurring lessons are restated in other words (and languages):
the word rule joins almost none of them. Used by the tests of model-proposed groups."""

PARAPHRASE_MEMORY = {
    "name": "paraphrases",
    "threshold": 3,
    "lessons": [
        {
            "id": "r1",
            "date": "2026-03-02",
            "theme": "retry-jitter",
            "text": "The retry helper sleeps a fixed 2 s between attempts, with no jitter",
        },
        {
            "id": "r2",
            "date": "2026-03-09",
            "theme": "retry-jitter",
            "text": "After the outage all workers hit the API in lockstep and tripped the rate limit",
        },
        {"id": "r3", "date": "2026-03-17", "theme": "retry-jitter", "text": "Spread retries with randomised backoff"},
        {
            "id": "t1",
            "date": "2026-03-03",
            "theme": "scheduler-utc",
            "text": "Cron jobs ran an hour late after the clocks changed in March",
        },
        {
            "id": "t2",
            "date": "2026-03-11",
            "theme": "scheduler-utc",
            "text": "Store schedule times in UTC and convert them only for display",
        },
        {
            "id": "t3",
            "date": "2026-03-20",
            "theme": "scheduler-utc",
            "text": "Die Zeitplanung muss in UTC rechnen, sonst verschieben sich Aufträge bei der Sommerzeit",
        },
        {
            "id": "m1",
            "date": "2026-03-04",
            "theme": "batched-backfill",
            "text": "Adding a column with a default rewrote the whole orders table and blocked writes for ten minutes",
        },
        {
            "id": "m2",
            "date": "2026-03-12",
            "theme": "batched-backfill",
            "text": "Large table migrations add a nullable column first and fill it afterwards",
        },
        {
            "id": "m3",
            "date": "2026-03-23",
            "theme": "batched-backfill",
            "text": "La migración bloqueó la tabla de pedidos; hay que rellenar los datos por lotes",
        },
        {
            "id": "x1",
            "date": "2026-03-05",
            "theme": None,
            "text": "The billing page shows prices in the customer's own currency",
        },
        {
            "id": "x2",
            "date": "2026-03-13",
            "theme": None,
            "text": "Feature flags are read at boot from config/flags.yml",
        },
        {
            "id": "x3",
            "date": "2026-03-21",
            "theme": None,
            "text": "Retry buttons in the web UI stay disabled while a request is pending",
        },
        {
            "id": "x4",
            "date": "2026-03-25",
            "theme": None,
            "text": "The orders table has a partial index on open orders only",
        },
    ],
}
