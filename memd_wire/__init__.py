"""What the hook client and the daemon agree on, in the standard library only.

The frame format (``frame``), file locations (``paths``), the spool (``spool``),
starting the daemon (``autostart``), where memd is installed (``launcher``) and the
hook client itself (``handoff``).  Claude Code runs the hook client as
``python -I -S memd_client/hook.py <Event>``, without site-packages: ``hook.py`` puts
this directory on ``sys.path`` and its modules import each other as top-level modules.
The daemon (``memd``) and the other clients (``memd_client``) import them by package
name.  Neither of those packages is imported from here.
"""
