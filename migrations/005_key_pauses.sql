-- darkroom ledger: pauses the service asked for (429/503 with Retry-After or
-- RateLimit-Reset), per key. Like the call log, they belong to the key's budget: a run
-- started again within a pause must wait it out too, not meet the same 429 at once.

CREATE TABLE key_pauses (
  key_fp    TEXT    PRIMARY KEY,
  until_ms  INTEGER NOT NULL,
  -- when it was asked for
  at_ms     INTEGER NOT NULL
);
