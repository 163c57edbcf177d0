"""Services: the daemon's work, each over the store and the pure logic below it (ingest, embedding, search, recall, janitor)."""
