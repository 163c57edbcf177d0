"""``memctl ui``: a local web viewer of memory (``app.py`` the pages, ``guard.py`` who may see them).

Built on Starlette (ASGI, on anyio like the daemon, small and well kept) served by uvicorn,
with Jinja2 templates (autoescaping: a memory's HTML is shown as text) and a few lines of
plain JavaScript shipped in ``static/``: no framework to build, no CDN, works offline.
"""
