-- darkroom ledger: each name's output name kept with the key collisions are judged by, so that a
-- discovery that records its photos in batches while the run works (an archive of a million
-- photos) asks the ledger whether an output name is taken, instead of holding every name in memory.
-- Append new numbered files; never edit this one once it has landed.

-- The output's path under output.dir with its extension left out, in Unicode NFC and lower case
-- (outputs/naming.ts collisionKey): two names with one key would write one file on a file system
-- that does not tell case or normalisation apart. NULL until given (rows named before this column
-- get it at the next discovery).
ALTER TABLE inputs ADD COLUMN out_key TEXT;
CREATE INDEX inputs_out_key ON inputs (out_key) WHERE out_key IS NOT NULL;
