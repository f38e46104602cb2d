-- Optional semantic search (docs/files-api.md): a passage's embedding
-- from the configured /v1/embeddings endpoint, little-endian float32s;
-- NULL when none is configured or the endpoint failed.
ALTER TABLE file_passages ADD COLUMN embedding BYTEA;
