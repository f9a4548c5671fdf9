-- The places of the probes and plan validations running at once
-- (probe.max_running, counted across every service on the database): a
-- service takes a free row for each, holds it under a lease that it
-- renews, and frees it when the work ends. probe names the probe run in
-- the place (none for a validation, or a probe still checking its
-- target); cancel is set when a client asked for the run to stop.
CREATE TABLE job_slots (
    slot       INTEGER PRIMARY KEY,
    lease      TEXT,
    replica    TEXT    NOT NULL DEFAULT '',
    probe      TEXT    REFERENCES probes (id),
    cancel     BOOLEAN NOT NULL DEFAULT false,
    taken_ns   BIGINT  NOT NULL DEFAULT 0,
    expires_ns BIGINT  NOT NULL DEFAULT 0
);

CREATE INDEX job_slots_by_probe ON job_slots (probe);

-- A probe run's events as they happen (status, progress, step), numbered
-- from 1 within the run, so that any service can stream them.
CREATE TABLE probe_events (
    probe      BIGINT NOT NULL REFERENCES probes (seq) ON DELETE CASCADE,
    n          BIGINT NOT NULL,
    kind       TEXT   NOT NULL,
    data       TEXT   NOT NULL,
    created_ns BIGINT NOT NULL,
    PRIMARY KEY (probe, n)
);
