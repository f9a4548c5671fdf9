-- How many of a request row's input tokens the endpoint answered from its
-- prompt cache (usage.prompt_tokens_details.cached_tokens), how many its
-- prompt shared with others as a prefix, and, in a conversation, the task
-- and the call within it (0 in rows written before, and outside those
-- probe modes).

ALTER TABLE probe_records ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE probe_records ADD COLUMN prefix_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE probe_records ADD COLUMN task INTEGER NOT NULL DEFAULT 0;
ALTER TABLE probe_records ADD COLUMN task_call INTEGER NOT NULL DEFAULT 0;
