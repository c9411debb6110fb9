-- darkroom ledger: what each file darkroom wrote carries, and its checksums.
-- Append new numbered files; never edit this one once it has landed.

-- The file's checksums (hex), taken as it was written: `darkroom manifest` lists them and
-- says when a file on disk no longer matches. NULL for files written before this version.
ALTER TABLE output_files ADD COLUMN sha256 TEXT;
ALTER TABLE output_files ADD COLUMN sha512 TEXT;

-- The metadata written into the file (output.metadata): 'all' or 'basic' (the input's tags at
-- that level, with the AI disclosure and provenance), 'provenance' (the disclosure and
-- provenance only: the input's tags could not be carried, meta_note says why), 'none' (the
-- service's bytes as they are: output.metadata none, or ExifTool could not write the file).
-- NULL for files written before this version.
ALTER TABLE output_files ADD COLUMN meta TEXT CHECK (meta IN ('all', 'basic', 'provenance', 'none'));
-- Why the input's metadata is not on the file (NULL when it is, or when none was asked for).
ALTER TABLE output_files ADD COLUMN meta_note TEXT;
-- What the report shows of it: when the photo was taken and its caption, as carried.
ALTER TABLE output_files ADD COLUMN meta_taken TEXT;
ALTER TABLE output_files ADD COLUMN meta_caption TEXT;
