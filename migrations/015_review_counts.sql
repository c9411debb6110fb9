-- darkroom ledger: how many done photos a person accepted and rejected, kept up to date by the
-- ledger itself, as migration 013 keeps the other counts `status` shows: reading them then
-- costs the same at a million photos as at ten.
-- Append new numbered files; never edit this one once it has landed.
--
-- A decision STANDS (ledger/reviews.ts) while its photo is done and its output is the one the
-- decision was about: reviews.output_sha256 IS the sha256 of the output_files row at the
-- photo's output_path (NULL when there is no such row). It depends on four columns of three
-- tables, so each trigger below takes off what its row counted before the change and adds
-- what it counts after, reading the other tables as they are: the changes of one transaction,
-- in whatever order, add up to the count the rows give. (Nothing in darkroom writes these
-- tables with INSERT OR REPLACE, whose deletes fire no trigger.)
CREATE TABLE review_counts (
  decision TEXT    PRIMARY KEY CHECK (decision IN ('accept', 'reject')),
  n        INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO review_counts (decision, n)
  SELECT d.decision, (SELECT COUNT(*) FROM reviews r JOIN items i ON i.id = r.item_id AND i.state = 'done'
                      WHERE r.decision = d.decision AND r.output_sha256 IS (SELECT sha256 FROM output_files WHERE path = i.output_path))
  FROM (SELECT 'accept' AS decision UNION ALL SELECT 'reject') d;

-- A decision made, changed or taken back: its photo's share, read with the photo as it is.
CREATE TRIGGER review_counts_review_insert AFTER INSERT ON reviews BEGIN
  UPDATE review_counts SET n = n + 1 WHERE decision = new.decision AND EXISTS (SELECT 1 FROM items i
    WHERE i.id = new.item_id AND i.state = 'done' AND new.output_sha256 IS (SELECT sha256 FROM output_files WHERE path = i.output_path));
END;
CREATE TRIGGER review_counts_review_delete AFTER DELETE ON reviews BEGIN
  UPDATE review_counts SET n = n - 1 WHERE decision = old.decision AND EXISTS (SELECT 1 FROM items i
    WHERE i.id = old.item_id AND i.state = 'done' AND old.output_sha256 IS (SELECT sha256 FROM output_files WHERE path = i.output_path));
END;
CREATE TRIGGER review_counts_review_update AFTER UPDATE OF item_id, decision, output_sha256 ON reviews BEGIN
  UPDATE review_counts SET n = n - 1 WHERE decision = old.decision AND EXISTS (SELECT 1 FROM items i
    WHERE i.id = old.item_id AND i.state = 'done' AND old.output_sha256 IS (SELECT sha256 FROM output_files WHERE path = i.output_path));
  UPDATE review_counts SET n = n + 1 WHERE decision = new.decision AND EXISTS (SELECT 1 FROM items i
    WHERE i.id = new.item_id AND i.state = 'done' AND new.output_sha256 IS (SELECT sha256 FROM output_files WHERE path = i.output_path));
END;

-- A photo that becomes done or stops being done (a redo), or whose output is another file:
-- its decision's share before and after. Most moves are between states other than done, and
-- the WHEN keeps them from reading anything.
CREATE TRIGGER review_counts_item_insert AFTER INSERT ON items WHEN new.state = 'done' BEGIN
  UPDATE review_counts SET n = n + 1 WHERE decision = (SELECT r.decision FROM reviews r
    WHERE r.item_id = new.id AND r.output_sha256 IS (SELECT sha256 FROM output_files WHERE path = new.output_path));
END;
CREATE TRIGGER review_counts_item_delete AFTER DELETE ON items WHEN old.state = 'done' BEGIN
  UPDATE review_counts SET n = n - 1 WHERE decision = (SELECT r.decision FROM reviews r
    WHERE r.item_id = old.id AND r.output_sha256 IS (SELECT sha256 FROM output_files WHERE path = old.output_path));
END;
CREATE TRIGGER review_counts_item_update AFTER UPDATE OF id, state, output_path ON items
  WHEN (old.state = 'done' OR new.state = 'done')
   AND (old.id IS NOT new.id OR old.state IS NOT new.state OR old.output_path IS NOT new.output_path) BEGIN
  UPDATE review_counts SET n = n - 1 WHERE old.state = 'done' AND decision = (SELECT r.decision FROM reviews r
    WHERE r.item_id = old.id AND r.output_sha256 IS (SELECT sha256 FROM output_files WHERE path = old.output_path));
  UPDATE review_counts SET n = n + 1 WHERE new.state = 'done' AND decision = (SELECT r.decision FROM reviews r
    WHERE r.item_id = new.id AND r.output_sha256 IS (SELECT sha256 FROM output_files WHERE path = new.output_path));
END;

-- An output file written, rewritten, renamed or removed: the done photos whose output it is
-- (by the items' output_path index) counted against its checksum before and after. A file
-- that is not there counts as a checksum of NULL, as the standing decision reads it.
CREATE TRIGGER review_counts_file_insert AFTER INSERT ON output_files BEGIN
  UPDATE review_counts SET n = n
    - (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = new.path AND i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS NULL)
    + (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = new.path AND i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS new.sha256);
END;
CREATE TRIGGER review_counts_file_delete AFTER DELETE ON output_files BEGIN
  UPDATE review_counts SET n = n
    - (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = old.path AND i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS old.sha256)
    + (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = old.path AND i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS NULL);
END;
CREATE TRIGGER review_counts_file_update AFTER UPDATE OF path, sha256 ON output_files
  WHEN old.path IS NOT new.path OR old.sha256 IS NOT new.sha256 BEGIN
  UPDATE review_counts SET n = n
    - (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = old.path AND i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS old.sha256)
    + (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = old.path AND i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS NULL)
    - (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = new.path AND i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS NULL)
    + (SELECT COUNT(*) FROM items i JOIN reviews r ON r.item_id = i.id WHERE i.output_path = new.path AND i.state = 'done'
         AND r.decision = review_counts.decision AND r.output_sha256 IS new.sha256);
END;
