-- Placeholder: migration 006 belongs to another part of issue 12, developed in parallel.
-- This branch (i12-steps, migration 007) needs the numbers without a gap to run on its own;
-- at merge the other part's 006 replaces this file. It changes nothing.
SELECT 1;
