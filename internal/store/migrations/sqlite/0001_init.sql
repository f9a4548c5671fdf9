-- Plans, probe runs and their per-request rows. Times are Unix nanoseconds
-- (UTC); JSON documents are stored as text.

CREATE TABLE probes (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    id             TEXT    NOT NULL UNIQUE,
    status         TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted')),
    base_url       TEXT    NOT NULL,
    model          TEXT    NOT NULL,
    config         TEXT    NOT NULL,
    error          TEXT    NOT NULL DEFAULT '',
    created_ns     INTEGER NOT NULL,
    started_ns     INTEGER,
    finished_ns    INTEGER,
    n_records      INTEGER NOT NULL DEFAULT 0,
    n_ok           INTEGER NOT NULL DEFAULT 0,
    n_rate_limited INTEGER NOT NULL DEFAULT 0,
    n_failed       INTEGER NOT NULL DEFAULT 0,
    result         TEXT,
    rate_limits    TEXT,
    stop_reason    TEXT    NOT NULL DEFAULT '',
    stop_detail    TEXT    NOT NULL DEFAULT ''
);

CREATE INDEX probes_by_created ON probes (created_ns DESC, seq DESC);
CREATE INDEX probes_by_status ON probes (status);

-- One row per request of a probe run. seq is the arrival order within the
-- run; the key orders rows by step and index, as requests.csv lists them.
CREATE TABLE probe_records (
    probe            INTEGER NOT NULL REFERENCES probes (seq) ON DELETE CASCADE,
    step             INTEGER NOT NULL,
    idx              INTEGER NOT NULL,
    seq              INTEGER NOT NULL,
    start_s          REAL    NOT NULL,
    ack_ms           REAL    NOT NULL,
    ttft_ms          REAL    NOT NULL,
    e2e_ms           REAL    NOT NULL,
    output_tokens    INTEGER NOT NULL,
    input_tokens     INTEGER NOT NULL,
    output_estimated INTEGER NOT NULL,
    status           INTEGER NOT NULL,
    error            TEXT    NOT NULL,
    attempts         INTEGER NOT NULL,
    retry_after_ms   REAL    NOT NULL,
    ok               INTEGER NOT NULL,
    warmup           INTEGER NOT NULL,
    PRIMARY KEY (probe, step, idx, seq)
) WITHOUT ROWID;

CREATE TABLE plans (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT    NOT NULL UNIQUE,
    name       TEXT    NOT NULL DEFAULT '',
    labels     TEXT    NOT NULL DEFAULT '{}',
    created_ns INTEGER NOT NULL,
    probe_id   TEXT    REFERENCES probes (id),
    scenario   TEXT    NOT NULL,
    plan       TEXT    NOT NULL
);

CREATE INDEX plans_by_created ON plans (created_ns DESC, seq DESC);
CREATE INDEX plans_by_probe ON plans (probe_id);
