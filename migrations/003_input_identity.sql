-- darkroom ledger, version 3: inputs identified by their content (issue 5).
-- An item is one distinct photo: the SHA-256 of a file's bytes, or 'url:' and the SHA-256 of
-- a listed URL. Every name the photo goes by (a path under input.dir, a line of input.urls)
-- is a row of `inputs`, so the same photo found twice is processed once and its result
-- written under both names, a renamed file keeps its item, and a changed file gets a new one.

CREATE TABLE inputs (
  id            INTEGER PRIMARY KEY,
  -- 'f:' + path under input.dir (with '/'), or 'u:' + URL + newline + output name
  key           TEXT    NOT NULL UNIQUE,
  kind          TEXT    NOT NULL CHECK (kind IN ('file', 'url')),
  -- the path under input.dir, or the output name a URL line gives (or that is made from its URL)
  name          TEXT    NOT NULL,
  -- the absolute path, or the URL
  src           TEXT    NOT NULL,
  item_id       INTEGER NOT NULL REFERENCES items (id),
  content_hash  TEXT    NOT NULL,
  size_bytes    INTEGER,
  mtime_ms      INTEGER,
  -- which discovery last found this name (meta 'inputs.generation'); older ones are gone from the tree
  seen_gen      INTEGER NOT NULL,
  -- where this name's output goes: a folder under output.dir ('' for its top) and the value of
  -- {name}, collisions already resolved; fixed once given, for the naming it was given under
  out_dir       TEXT,
  out_name      TEXT,
  naming        TEXT,
  -- the output last written for this name
  output_path   TEXT,
  written_ms    INTEGER,
  created_ms    INTEGER NOT NULL
);
CREATE INDEX inputs_item ON inputs (item_id, seen_gen);
CREATE INDEX inputs_seen ON inputs (seen_gen);

-- One item per content. Ledgers of version 1 never set content_hash (all NULL).
CREATE UNIQUE INDEX items_content_hash ON items (content_hash) WHERE content_hash IS NOT NULL;

-- Every file darkroom wrote under output.dir: outputs, kept intermediates, sidecars. A file
-- at an output path that is not here (nor an item's output_path) is an operator's, and is
-- never overwritten.
CREATE TABLE output_files (
  path        TEXT    PRIMARY KEY,
  item_id     INTEGER NOT NULL REFERENCES items (id),
  input_id    INTEGER REFERENCES inputs (id),
  kind        TEXT    NOT NULL CHECK (kind IN ('output', 'intermediate', 'sidecar')),
  step_index  INTEGER,
  bytes       INTEGER NOT NULL,
  written_ms  INTEGER NOT NULL
);
CREATE INDEX output_files_item ON output_files (item_id);
