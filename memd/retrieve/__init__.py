"""Retrieval: query → lanes → fusion → calibrated hits, and the progressive layers.

The query compiler is ``memd/query.py`` (a leaf) and the search lanes' SQL ``memd/store/lanes.py``
(keyword | trigram | substring, and the events of the vector neighbours); here:

    rank.py     fuse, evidence: RRF over lane ranks; confidence from coverage and similarity
    engine.py   Retriever.search: the scoped, filtered, explained result list (layer 1)
    layers.py   resolve an id, the timeline around a memory (layer 2), its details (layer 3)
    digest.py   summaries, previews and costs of memories, for those layers
    smart.py    when smart_search expands by itself

The package imports nothing itself: ``digest`` is pure and light, and the continuity code
uses it without loading the engine.
"""
