-- darkroom ledger: the input's own XMP sidecars read into each file darkroom wrote.
-- Append new numbered files; never edit this one once it has landed.

-- The names of the XMP sidecars beside the input (`scan.xmp`, `scan.tif.xmp`) whose fields
-- were merged into the file's metadata, one a line in the order they were read (the last
-- wins); NULL when none was read. The report and provenance.csv say so.
ALTER TABLE output_files ADD COLUMN meta_sidecars TEXT;
