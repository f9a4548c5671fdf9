-- One row that each readiness check rewrites: a check that the store can
-- commit a write, not only answer a read.

CREATE TABLE readiness (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    checked_ns BIGINT  NOT NULL
);

INSERT INTO readiness (id, checked_ns) VALUES (1, 0);
