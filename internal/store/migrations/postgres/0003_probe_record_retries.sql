-- A request row's time from its first send (retries and their waits
-- included; 0 in rows written before: their e2e_ms is that time), the
-- rate of an open-loop step (0 in a closed loop), and whether the row
-- belongs to a knee search's refinement step.

ALTER TABLE probe_records ADD COLUMN e2e_with_retries_ms DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE probe_records ADD COLUMN rate_rps DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE probe_records ADD COLUMN refine BOOLEAN NOT NULL DEFAULT false;
