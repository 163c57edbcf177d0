"""Services: the daemon's work, each over the store and the pure logic below it.

Ingest, embedding, search, recall, the janitor: each a small object the daemon builds
once and the server's dispatch table calls.
"""
