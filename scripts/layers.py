"""The layering rule of DESIGN.md section 3, as data, for scripts/lint.sh
(the #include lines) and scripts/check-layers.py (the linked symbols):
which layers (first directory under src/) each layer may use."""
BASE = ['util', 'proc', 'adapter', 'audit', 'route']
ALLOWED = {
    'util': ['util'],
    'proc': ['util', 'proc'],
    'adapter': ['util', 'proc', 'adapter'],
    'audit': ['util', 'proc', 'audit'],
    'route': BASE,
    'runner': BASE + ['runner'],
    'orch': BASE + ['orch'],
    'onboard': BASE + ['onboard'],
    'cli': None,  # everything
}
