-- A probe run's label: the caller's free text naming the run.

ALTER TABLE probes ADD COLUMN label TEXT NOT NULL DEFAULT '';
