// What a store call was asked to do, by the key a retry of it will bring: the caller's
// idempotency key ("key:..."), or the digest of an exact duplicate from one client session
// ("dup:...", until expires_at). `digest` is what was asked to store; `memory_id` what was stored.
CREATE NODE TABLE StoreKey(key STRING PRIMARY KEY, memory_id STRING, digest STRING, at TIMESTAMP, expires_at TIMESTAMP);
