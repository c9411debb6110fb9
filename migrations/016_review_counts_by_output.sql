-- darkroom ledger: migration 015's triggers on output_files, finding the done photos whose
-- output a file is by the items' output_path index. As 015 wrote them, SQLite (a ledger has no
-- statistics) looked them up by the state index instead: every output file written, renamed or
-- removed walked every done photo (at 100,000 done, 51 ms a file against 0.2 ms). `+i.state`
-- leaves the state index out, as the ledger's other queries over one output's photos do.
-- Append new numbered files; never edit this one once it has landed.
DROP TRIGGER review_counts_file_insert;
DROP TRIGGER review_counts_file_delete;
DROP TRIGGER review_counts_file_update;

-- An output file written, rewritten, renamed or removed: the done photos whose output it is
-- (by the items' output_path index) counted against its checksum before and after. A file
-- that is not there counts as a checksum of NULL, as the standing decision reads it.
CREATE TRIGGER review_counts_file_insert AFTER INSERT ON output_files BEGIN
  UPDATE review_counts SET n = n
    - (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = new.path AND +i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS NULL)
    + (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = new.path AND +i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS new.sha256);
END;
CREATE TRIGGER review_counts_file_delete AFTER DELETE ON output_files BEGIN
  UPDATE review_counts SET n = n
    - (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = old.path AND +i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS old.sha256)
    + (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = old.path AND +i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS NULL);
END;
CREATE TRIGGER review_counts_file_update AFTER UPDATE OF path, sha256 ON output_files
  WHEN old.path IS NOT new.path OR old.sha256 IS NOT new.sha256 BEGIN
  UPDATE review_counts SET n = n
    - (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = old.path AND +i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS old.sha256)
    + (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = old.path AND +i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS NULL)
    - (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = new.path AND +i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS NULL)
    + (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = new.path AND +i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS new.sha256);
END;
