-- What a request row's answer named in its model field ('' when it named
-- none, or in rows written before), and how the attempt its times are
-- measured from got its connection: new or reused ('' before), the wait
-- for it, and the phases of a new one (0 for a reused one and before).

ALTER TABLE probe_records ADD COLUMN served_model TEXT NOT NULL DEFAULT '';
ALTER TABLE probe_records ADD COLUMN conn TEXT NOT NULL DEFAULT '';
ALTER TABLE probe_records ADD COLUMN conn_wait_ms DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE probe_records ADD COLUMN dns_ms DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE probe_records ADD COLUMN connect_ms DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE probe_records ADD COLUMN tls_ms DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE probe_records ADD COLUMN ttfb_ms DOUBLE PRECISION NOT NULL DEFAULT 0;
