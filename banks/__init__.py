"""The bundled catalog of spherecodes: ``registry.json`` and the banks it lists.

Installed as the package ``spherecodes.banks`` so that the banks are there
offline right after installation; :mod:`spherecodes.registry` reads them.
"""
