"""ubiqfs on the desktop: item states for file managers' emblems, their context-menu
actions, and the small dialogs those open (docs/DESKTOP.md).

Everything here talks to a mount's daemon through its control socket or the
`user.ubiqfs.*` xattrs; nothing here ever reads a file's content, so showing a
folder never downloads anything.
"""
