import sys

if sys.version_info < (3, 10):   # setup.py's python_requires; this file itself parses on older ones
    print(f"netloop: the operator's side needs Python 3.10 or newer (this is {sys.version.split()[0]}); "
          "a robot runs only the modules listed by src/netloop/robot_side.py, which need 3.8 "
          "(docs/install.md)", file=sys.stderr)
    sys.exit(2)

try:
    from .cli import main
except ModuleNotFoundError as err:   # the CLI itself needs PyYAML (experiment files are YAML)
    if err.name != "yaml":
        raise
    print("netloop: needs PyYAML (missing: yaml); install it (Debian: apt-get install python3-yaml) "
          "or run 'make build'", file=sys.stderr)
    sys.exit(2)

sys.exit(main())
